package sync

import (
	"errors"
	"net/netip"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// syncFull recomputes every Service, dumps the kernel (virtual servers, real servers of
// ours, dummy addresses, set members, our iptables chains), and repairs every
// difference. It adopts what exists instead of flushing, so a restart never interrupts
// traffic, and it prunes only what we own: addresses on the dummy interface, members
// of our sets, and virtual servers on our addresses outside --ipvs-exclude-cidrs.
func (s *Syncer) syncFull() error {
	s.cfg = s.nodeConfig()
	s.desired = proxier.NewDesired()
	for _, k := range s.src.ServiceKeys() {
		s.updateService(k, nil)
	}
	if err := s.k.Addresses.EnsureDummy(s.cfg.DummyDevice); err != nil {
		return err
	}
	var errs []error
	sets := proxier.Sets(s.cfg.Families)
	for _, set := range sets {
		errs = append(errs, s.k.IPSets.EnsureSet(set))
	}
	addrs, err := s.k.Addresses.ListAddresses(s.cfg.DummyDevice)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	vss, err := s.k.IPVS.ListVirtualServers()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}

	delta := proxier.NewDelta()
	s.addrs = make(map[netip.Addr]struct{}, len(addrs))
	for _, a := range addrs {
		s.addrs[a] = struct{}{}
		delta.Addresses[a] = struct{}{}
	}
	for _, a := range s.desired.Addresses() {
		delta.Addresses[a] = struct{}{}
	}

	prev := s.vs
	s.vs = make(map[kernel.VSKey]*programmedVS, len(vss))
	for _, vs := range vss {
		key := vs.VSKey
		_, _, wanted := s.desired.VirtualServer(key)
		_, ours := prev[key]
		if !wanted && !ours && !s.owns(key) {
			continue // someone else's: never touched
		}
		rss, err := s.k.IPVS.ListRealServers(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vs.Flags &= kernel.OwnFlags
		p := &programmedVS{vs: vs, rss: make(map[netip.AddrPort]kernel.RealServer, len(rss))}
		for _, rs := range rss {
			p.rss[rs.AddrPort()] = rs
		}
		s.vs[key] = p
		delta.VirtualServers[key] = struct{}{}
	}
	for _, key := range s.desired.VirtualServerKeys() {
		delta.VirtualServers[key] = struct{}{}
	}
	// A draining server that vanished from the kernel needs no more draining.
	for dk := range s.drain {
		if p := s.vs[dk.vs]; p == nil || p.rss[dk.dest] == (kernel.RealServer{}) {
			delete(s.drain, dk)
		}
	}

	s.members = map[kernel.Member]struct{}{}
	for _, set := range sets {
		entries, err := s.k.IPSets.ListEntries(set.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			m := kernel.Member{Set: set.Name, Entry: e}
			s.members[m] = struct{}{}
			delta.Members[m] = struct{}{}
		}
	}
	for _, m := range s.desired.Members() {
		delta.Members[m] = struct{}{}
	}

	errs = append(errs, s.apply(delta), s.syncRules(true))
	return errors.Join(errs...)
}

// owns reports whether a virtual server found in the kernel is ours to prune: on an
// address of our dummy interface, or a NodePort on a node IP, and not excluded.
func (s *Syncer) owns(key kernel.VSKey) bool {
	if slices.ContainsFunc(s.opts.ExcludeCIDRs, func(p netip.Prefix) bool { return p.Contains(key.Address) }) {
		return false
	}
	if _, ok := s.addrs[key.Address]; ok {
		return true
	}
	return slices.Contains(s.cfg.NodeIPs, key.Address) && key.Port >= s.opts.NodePortMin && key.Port <= s.opts.NodePortMax
}
