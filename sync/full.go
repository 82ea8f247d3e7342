package sync

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// syncFull dumps the kernel (virtual servers, real servers of ours, dummy addresses,
// set members, our iptables chains) and repairs every difference. The desired state is
// rebuilt from every Service only when the node's config (addresses, zone) changed or on
// the first run; otherwise only the changed Services are recomputed, as in a partial
// sync: the periodic full sync is there to repair the kernel, and re-translating 30,000
// unchanged Services every syncPeriod was most of its cost. It adopts what exists instead of flushing, so a restart never interrupts
// traffic, and it prunes only what we own: addresses on the dummy interface, members
// of our sets, and virtual servers on our addresses outside --ipvs-exclude-cidrs.
func (s *Syncer) syncFull(keys map[proxier.ServiceKey]struct{}) error {
	start := s.opts.Now()
	s.needFull = true
	s.retry, s.pendingSets = proxier.NewDelta(), map[string]struct{}{}
	if cfg := s.nodeConfig(); !s.built || !reflect.DeepEqual(cfg, s.cfg) {
		s.cfg = cfg
		s.desired = proxier.NewDesired()
		for _, k := range s.src.ServiceKeys() {
			s.updateService(k, nil)
		}
		s.built = true
	} else {
		for k := range keys {
			s.updateService(k, nil)
		}
	}
	if hc := s.opts.HealthChecks; hc != nil {
		hc.ReplaceHealthChecks(s.desired.HealthChecks())
	}
	if err := s.k.Addresses.EnsureDummy(s.cfg.DummyDevice); err != nil {
		return err
	}
	var errs []error
	sets := proxier.Sets(s.cfg.Families)
	for _, set := range sets {
		if err := s.k.IPSets.EnsureSet(set); err != nil {
			errs = append(errs, err)
			s.pendingSets[set.Name] = struct{}{}
		}
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
		if p := prev[key]; p != nil && wanted && !s.checkRealServersNow(key) {
			// Known and unchanged at the virtual-server level: keep the cached real
			// servers; this virtual server's turn to be re-read comes within
			// RealServerCheckEvery full syncs.
			vs.Flags &= kernel.OwnFlags
			p.vs = vs
			s.vs[key] = p
			delta.VirtualServers[key] = struct{}{}
			continue
		}
		rss, err := s.k.IPVS.ListRealServers(key)
		if err != nil {
			errs = append(errs, err)
			if wanted {
				continue // left out of the cache: re-added, which adopts and corrects it
			}
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

	// The dumps that decide ownership worked: from here on, failures are retried one
	// object at a time.
	s.needFull, s.lastFull = false, start
	s.fullRound++

	// Every set is re-read each full sync. (Skipping sets whose header count is unchanged
	// halved idle CPU at 5,000 Services, but lost the members of Services changed within
	// a full sync: those are recomputed without a delta. Left for the next change.)
	s.members = map[string]map[kernel.SetEntry]struct{}{}
	for _, set := range sets {
		s.pendingSets[set.Name] = struct{}{}
	}
	errs = append(errs, s.relistPendingSets(delta), s.apply(delta), s.syncRules(true))
	return errors.Join(errs...)
}

// relistPendingSets (re)creates and lists the pending sets, replaces their cached
// members, and adds every listed and desired member of them to delta. A set that
// fails stays pending; its members are not diffed until it is listed.
func (s *Syncer) relistPendingSets(delta *proxier.Delta) error {
	if len(s.pendingSets) == 0 {
		return nil
	}
	var errs []error
	listed := map[string]bool{}
	for _, set := range proxier.Sets(s.cfg.Families) {
		if _, ok := s.pendingSets[set.Name]; !ok {
			continue
		}
		if err := s.k.IPSets.EnsureSet(set); err != nil {
			errs = append(errs, err)
			continue
		}
		entries, err := s.k.IPSets.ListEntries(set.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		delete(s.pendingSets, set.Name)
		listed[set.Name] = true
		cached := make(map[kernel.SetEntry]struct{}, len(entries))
		for _, e := range entries {
			cached[e] = struct{}{}
			delta.Members[kernel.Member{Set: set.Name, Entry: e}] = struct{}{}
		}
		s.members[set.Name] = cached
	}
	for _, m := range s.desired.Members() {
		if listed[m.Set] {
			delta.Members[m] = struct{}{}
		}
	}
	return errors.Join(errs...)
}

// checkRealServersNow reports whether this full sync re-reads key's real servers. Each
// full sync reads a rotating 1/RealServerCheckEvery of our virtual servers: moby/ipvs
// has no dump of all destinations, so reading them all is one netlink dump per virtual
// server, which at 30,000 Services made the periodic full sync the daemon's main idle
// cost. Virtual servers themselves are checked every full sync (one dump).
func (s *Syncer) checkRealServersNow(key kernel.VSKey) bool {
	every := uint32(s.opts.RealServerCheckEvery)
	if every <= 1 {
		return true
	}
	h := uint32(key.Port)*2654435761 ^ uint32(key.Protocol)
	for _, b := range key.Address.AsSlice() {
		h = h*31 + uint32(b)
	}
	return h%every == uint32(s.fullRound)%every
}

// owns reports whether a virtual server found in the kernel is ours to prune.
func (s *Syncer) owns(key kernel.VSKey) bool {
	_, onDummy := s.addrs[key.Address]
	return Owns(key, onDummy, s.cfg.NodeIPs, s.opts.ExcludeCIDRs, s.opts.NodePortMin, s.opts.NodePortMax)
}

// Owns is the one ownership rule, shared by pruning and `ipvs-proxier cleanup`: a
// virtual server is ours when it is on an address of our dummy interface, or is a
// NodePort (a port in the NodePort range on a node IP), and is not in an excluded CIDR
// (--ipvs-exclude-cidrs, kube-proxy's rule for virtual servers made by others).
func Owns(key kernel.VSKey, onDummy bool, nodeIPs []netip.Addr, exclude []netip.Prefix, portMin, portMax uint16) bool {
	if slices.ContainsFunc(exclude, func(p netip.Prefix) bool { return p.Contains(key.Address) }) {
		return false
	}
	return onDummy || slices.Contains(nodeIPs, key.Address) && key.Port >= portMin && key.Port <= portMax
}
