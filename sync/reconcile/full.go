package reconcile

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"

	"go.uber.org/zap"

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
// of our sets, and virtual servers on our addresses outside --ipvs-exclude-cidrs. ph times
// its steps.
func (s *Syncer) syncFull(keys map[proxier.ServiceKey]struct{}, ph *phases) error {
	if !s.fullRunning { // else Sync began it in the background, and set fullBegan
		s.fullBegan = s.opts.Now()
	}
	s.needFull, s.fullRunning = true, true
	defer func() { s.fullRunning = false }()
	// changed collects the set members whose desire changed since the last sync: the
	// ones that failed then, and those of the Services changed since. Sets whose count
	// matches are not listed, so these must be written explicitly.
	changed := s.retry
	s.retry, s.pendingSets = proxier.NewDelta(), map[string]struct{}{}
	s.named = nil // read again, if needed, before this sync's sets are repaired
	listAll := s.refreshDesired(keys, changed)
	s.heavy = listAll || s.heavyDue()
	ph.mark("translate")
	if hc := s.opts.HealthChecks; hc != nil {
		hc.SetAddresses(healthCheckAddrs(&s.cfg))
		hc.ReplaceHealthChecks(s.desired.HealthChecks())
	}
	if err := s.k.Addresses.EnsureDummy(s.cfg.DummyDevice); err != nil {
		return err
	}
	var errs []error
	sets := proxier.Sets(s.cfg.Families)
	for i, set := range sets {
		sets[i] = s.sized(set)
		if err := s.k.IPSets.EnsureSet(sets[i]); err != nil {
			errs = append(errs, err)
			s.pendingSets[set.Name] = struct{}{}
		}
	}
	// The reads, with s.mu released (read.go): every virtual server dumped, or those
	// checked this round looked up (lookup.go); the addresses, unless the address watch
	// says they did not change (addrwatch.go).
	var addrs []netip.Addr
	var vss []kernel.DumpedVS
	var err error
	dev := s.cfg.DummyDevice
	dumpAll := s.dumpAllDue()
	var looked []kernel.VSKey
	if !dumpAll {
		looked = s.lookupKeys()
	}
	dumpAddrs := s.addressesDue(dumpAll)
	s.unlocked(func() {
		if dumpAddrs {
			addrs, err = s.k.Addresses.ListAddresses(dev)
		}
		if err == nil {
			if dumpAll {
				vss, err = s.k.IPVS.ListVirtualServers()
			} else {
				vss, err = s.k.IPVS.LookupVirtualServers(looked)
			}
		}
	})
	// read is how many of vss come from the kernel: all of a dump; after lookups, those
	// found, which lookedUp puts first, before the cached rest.
	read := len(vss)
	if err == nil && !dumpAll {
		var missing int
		if vss, read, missing = s.lookedUp(looked, vss); missing > 0 {
			s.log.Info("Virtual servers gone from the kernel behind our back; reading them all", zap.Int("missing", missing), zap.Int("lookedUp", len(looked)))
			s.unlocked(func() { vss, err = s.k.IPVS.ListVirtualServers() })
			read, dumpAll = len(vss), true
		}
	}
	s.dumpFailed, s.dumpedAll, s.dumpedAddrs = err != nil, dumpAll, dumpAddrs
	if err != nil {
		s.endRead()
		return errors.Join(append(errs, err)...)
	}
	s.lastDump = vss
	ph.mark("dump")
	if dumpAddrs {
		s.mergeAddresses(addrs)
	} else if dumpAll { // the lookups found drift: everything is compared, the cached addresses too
		addrs = s.cachedAddresses() // addrwatch.go
	}
	reads := s.realServersToRead(vss[:read])
	s.unlocked(func() { s.readRealServers(vss, reads) })
	round := s.fullRound + 1
	errs = append(errs, s.refreshCache(vss, read, round, reads, s.endRead())...)
	ph.mark("readRealServers")

	// The dumps that decide ownership worked: from here on, failures are retried one
	// object at a time (unless a change to every Service came during the reads).
	s.needFull, s.fullAgain, s.lastFull = s.fullAgain, false, s.fullBegan
	s.fullRound = round
	if s.heavy {
		s.lastHeavy = round
	}

	// The addresses first: if many, they are written alongside the rest (addrbatch.go).
	if dumpAll || dumpAddrs {
		s.applyAllAddresses(addrs)
	} else {
		for a := range changed.Addresses {
			s.applyAddress(a)
		}
	}
	batch := s.startAddresses()
	errs = append(errs, s.syncSets(sets, changed, listAll, ph))
	ph.mark("sets")
	if rsDue := s.realServersDue(changed, listAll, round); dumpAll {
		s.applyEverything(rsDue, &errs, ph)
	} else {
		s.applyLooked(looked, changed, rsDue, &errs, ph)
	}
	s.finishAddresses(batch, &errs)
	s.flushAddresses(&errs)
	ph.mark("addresses")
	errs = append(errs, s.syncRules(true))
	ph.mark("iptables")
	s.reconcileUDP()
	ph.mark("conntrack")
	return errors.Join(errs...)
}

// refreshDesired brings the desired state up to date for a full sync: rebuilt from every
// Service when the node's configuration changed (it reports true: every set must then be
// listed), else updated for the changed keys, their set members recorded in changed.
func (s *Syncer) refreshDesired(keys map[proxier.ServiceKey]struct{}, changed *proxier.Delta) bool {
	cfg := s.nodeConfig()
	if s.built && reflect.DeepEqual(cfg, s.cfg) {
		for k := range keys {
			s.updateService(k, changed)
		}
		return false
	}
	if cfg.LocalMode == proxier.LocalModeNodeCIDR && (!s.built || !slices.Equal(cfg.NodePodCIDRs, s.cfg.NodePodCIDRs)) {
		s.logNodeCIDRs(cfg.NodePodCIDRs)
	}
	s.cfg = cfg
	s.desired = proxier.NewDesired()
	for _, k := range s.src.ServiceKeys() {
		s.updateService(k, nil)
	}
	s.built = true
	return true
}

// refreshCache updates the programmed cache from the virtual-server dump vss, in place,
// not rebuilt: at 30,000 Services a new map and a delta naming every object were most of
// a full sync's garbage. The real servers of a virtual server are re-read when it is new,
// unwanted, or its turn in the CheckEvery rotation has come (checkRealServers): reads
// holds those read before, with s.mu released, in dump order. What a sync wrote during
// the reads (written) keeps its cached state. Only vss[:read] came from the kernel; the
// rest are the cache's own entries (lookedUp), which are only marked as seen: checking
// each of them (checkRealServers) was a third of the time of a full sync that looks up
// (BenchmarkPeriodicFullSync30k).
func (s *Syncer) refreshCache(vss []kernel.DumpedVS, read, round int, reads []rsRead, written *touched) []error {
	var errs []error
	for i, d := range vss {
		if i >= read {
			if p := s.vs[d.VSKey]; p != nil {
				p.seen = round
			}
			continue
		}
		var r rsRead
		if len(reads) > 0 && reads[0].i == i {
			r, reads = reads[0], reads[1:]
		} else {
			r.i = -1 // not read before
		}
		key, vs := d.VSKey, d.VirtualServer
		if written.hasVS(key) {
			continue // the dump is older than the cache here
		}
		vs.Flags &= kernel.OwnFlags
		ours, reread := s.checkRealServers(key)
		p := s.vs[key]
		switch {
		case !ours:
			continue // someone else's: never touched
		case !reread:
			// Known and unchanged at the virtual-server level: keep the cached real
			// servers; this virtual server's turn to be re-read comes within
			// CheckEvery full syncs.
			p.vs, p.stats, p.seen = vs, d.Stats, round
			continue
		}
		if r.i < 0 { // its state moved between the list of reads and now
			r.rss, r.err = s.k.IPVS.ListRealServers(key)
		}
		if r.err != nil {
			errs = append(errs, r.err)
			if _, _, wanted := s.desired.VirtualServer(key); wanted {
				s.dropVS(key) // left out of the cache: re-added, which adopts and corrects it
				continue
			}
		}
		if p == nil {
			p = &programmedVS{}
			s.setVS(key, p)
		}
		s.rsTotal += len(r.rss) - len(p.rss)
		p.vs, p.stats, p.rss, p.seen, p.read = vs, d.Stats, newRealServers(r.rss), round, round
	}
	for key := range written.vs {
		if p := s.vs[key]; p != nil {
			p.seen = round
		}
	}
	for key, p := range s.vs {
		if p.seen != round {
			s.dropVS(key) // gone from the kernel (or unreadable)
		}
	}
	// A draining server that vanished from the kernel needs no more draining.
	for dk := range s.drain {
		if p := s.vs[dk.vs]; p == nil || !p.hasRS(dk.dest) {
			delete(s.drain, dk)
		}
	}
	return errs
}

// realServersDue says which virtual servers' real servers a full sync compares with the
// desired ones: those it read from the kernel this round (read), those whose desire
// changed since the last sync or whose write failed then (changed), or all when the
// desired state was rebuilt (listAll). Every other one's cached real servers are what
// the last sync that touched it made them, and still desired: comparing all of them
// (56,000 virtual servers at 30,000 Services) was a third of an idle full sync in the VM
// (a profile of `make bench-scale`). Drift behind our back shows only in a read,
// and every virtual server is read within CheckEvery full syncs.
func (s *Syncer) realServersDue(changed *proxier.Delta, listAll bool, round int) func(kernel.VSKey) bool {
	if listAll {
		return nil
	}
	return func(key kernel.VSKey) bool {
		if _, ok := changed.VirtualServers[key]; ok {
			return true
		}
		p := s.vs[key]
		return p == nil || p.read == round
	}
}

// applyEverything applies every virtual server in the kernel or desired, without a
// delta: the cache holds exactly the kernel's (ours) then. rsDue is
// applyVirtualServers'. The addresses are compared before (syncFull: every one bound,
// as dumped, or desired). ph times it.
func (s *Syncer) applyEverything(rsDue func(kernel.VSKey) bool, errs *[]error, ph *phases) {
	// Each key once: the cached ones (ours in the kernel), then the desired ones not
	// cached.
	keys := make([]kernel.VSKey, 0, max(len(s.vs), s.desired.VirtualServerCount()))
	for key := range s.vs {
		keys = append(keys, key)
	}
	for key := range s.desired.VirtualServerKeySeq() {
		if s.vs[key] == nil {
			keys = append(keys, key)
		}
	}
	s.applyInChunks(keys, rsDue, errs)
	ph.mark("ipvs")
}

// applyInChunks compares and writes the virtual servers keys (each once) a chunk at a
// time, with the lock released between chunks (yieldLock). Each chunk decides and writes
// under one hold, so no decision outlives a partial sync that may change its key.
func (s *Syncer) applyInChunks(keys []kernel.VSKey, rsDue func(kernel.VSKey) bool, errs *[]error) {
	for chunk := range slices.Chunk(keys, applyChunk) {
		s.applyVirtualServers(slices.Values(chunk), rsDue, errs)
		s.flushRealServers(errs)
		if len(chunk) == applyChunk {
			s.yieldLock()
		}
	}
}

// applyAllAddresses compares every address bound (addrs) or desired.
func (s *Syncer) applyAllAddresses(addrs []netip.Addr) {
	for _, a := range addrs {
		s.applyAddress(a)
	}
	for a := range s.desired.AddressSeq() {
		if _, bound := s.addrs[a]; !bound {
			s.applyAddress(a)
		}
	}
}

// syncSets writes the changed members, then lists and repairs every set whose member
// count (one header-only netlink request) differs from the desired count, and every
// set on the heavy round (heavyDue) or when listAll. Listing all sets was most of an
// idle full sync's cost: 66,000 entries at 10,000 Services, in the VM ~half the CPU.
func (s *Syncer) syncSets(sets []kernel.Set, changed *proxier.Delta, listAll bool, ph *phases) error {
	var ops []kernel.SetOp
	for m := range changed.Members {
		if _, pending := s.pendingSets[m.Set]; pending {
			continue // listed below
		}
		ops = append(ops, s.memberOp(m))
	}
	errs := []error{s.writeMembers(ops)}
	listAll = listAll || s.heavy
	for _, set := range sets {
		if _, pending := s.pendingSets[set.Name]; pending || listAll {
			s.pendingSets[set.Name] = struct{}{}
			continue
		}
		if n, err := s.k.IPSets.CountEntries(set.Name); err != nil || n != s.desired.SetLen(set.Name) {
			s.pendingSets[set.Name] = struct{}{}
		}
	}
	return errors.Join(append(errs, s.reconcileSets(true, ph))...)
}

// reconcileSets (re)creates and lists the pending sets and makes each hold exactly its
// desired members, writing the differences; it keeps no copy of the members. A set
// that fails to list stays pending for the next sync.
//
// A full sync lists them with s.mu released (unlock), so changes are programmed
// meanwhile: each CheckEvery-th full sync lists every set, 228,004 entries at 30,000
// Services, and under the lock a change arriving then waited for all of it (change p99
// 22 and 31 s against a p50 of 1.1 s in the emulated VM, 3.6 s once unlocked; `make
// bench-scale`). The sets leave pendingSets while they are read, so a
// partial sync does not list them under the lock too. A partial sync's member writes
// during the read make the listing older than the kernel for those members; the repair
// compares it with the desired state as it then is and rewrites them, which the kernel
// takes as done (IPSET_ERR_EXIST is success), so they are neither lost nor reverted.
func (s *Syncer) reconcileSets(unlock bool, ph *phases) error {
	if len(s.pendingSets) == 0 {
		return nil // every partial sync calls this: no set list built for nothing
	}
	var errs []error
	var sets []kernel.Set
	for _, set := range proxier.Sets(s.cfg.Families) {
		if _, ok := s.pendingSets[set.Name]; !ok {
			continue
		}
		set = s.sized(set)
		if err := s.k.IPSets.EnsureSet(set); err != nil {
			errs = append(errs, err)
			continue
		}
		sets = append(sets, set)
		delete(s.pendingSets, set.Name)
	}
	if len(sets) == 0 {
		return errors.Join(errs...)
	}
	listed := make([][]kernel.SetEntry, len(sets))
	failed := make([]error, len(sets))
	list := func() {
		for i, set := range sets {
			listed[i], failed[i] = s.k.IPSets.ListEntries(set.Name)
		}
	}
	if unlock {
		s.unlocked(list)
		ph.mark("setsListed") // the rest of the "sets" step is the repair, under the lock
		s.endRead()           // the virtual-server and address caches were merged before
		// A change to every Service while the sets were read (a Sync then only sets
		// fullAgain) asks for another full sync, as one during the dumps does.
		s.needFull, s.fullAgain = s.needFull || s.fullAgain, false
	} else {
		list()
	}
	for i, set := range sets {
		if failed[i] != nil {
			s.pendingSets[set.Name] = struct{}{}
			errs = append(errs, failed[i])
			continue
		}
		errs = append(errs, s.repairSet(set.Name, listed[i]))
	}
	return errors.Join(errs...)
}

// repairSet makes the set hold exactly its desired members, given what it was listed to
// hold, writing the differences.
func (s *Syncer) repairSet(set string, entries []kernel.SetEntry) error {
	var ops []kernel.SetOp
	listed := make(map[kernel.SetEntry]struct{}, len(entries))
	for _, e := range entries {
		listed[e] = struct{}{}
		if !s.desired.HasMember(kernel.Member{Set: set, Entry: e}) {
			ops = append(ops, kernel.SetOp{Set: set, Entry: e, Delete: true})
		}
	}
	for e := range s.desired.SetEntries(set) {
		if _, ok := listed[e]; !ok {
			ops = append(ops, kernel.SetOp{Set: set, Entry: e})
		}
	}
	return s.writeMembers(ops)
}

// realServerReads is how many virtual servers' real servers a full sync reads at most
// in its rotation: one netlink dump each (IPVS_CMD_GET_DEST names one service), ~0.35 ms
// each in the VM, so at 30,000 Services (60,000 virtual servers) a tenth was 6,000 dumps
// and most of each full sync.
const realServerReads = 1000

// checkRealServersNow reports whether this full sync re-reads key's real servers. With
// CheckEvery > 1, each full sync reads a rotating 1/CheckEvery of our virtual servers,
// and no more than about realServerReads of them: reading them all is one netlink dump
// per virtual server. So hand-made real-server drift is repaired within
// max(CheckEvery, N/realServerReads) syncPeriods. Virtual servers themselves are checked
// every full sync (one dump).
func (s *Syncer) checkRealServersNow(key kernel.VSKey) bool {
	if s.opts.CheckEvery <= 1 {
		return true
	}
	every := uint32(max(s.opts.CheckEvery, (len(s.vs)+realServerReads-1)/realServerReads))
	h := uint32(key.Port)*2654435761 ^ uint32(key.Protocol)
	for _, b := range key.Address.AsSlice() {
		h = h*31 + uint32(b)
	}
	return h%every == uint32(s.fullRound)%every
}

// owns reports whether a virtual server found in the kernel is ours to prune.
func (s *Syncer) owns(key kernel.VSKey) bool {
	_, onDummy := s.addrs[key.Address]
	if !onDummy && (slices.Contains(s.cfg.NodeIPs, key.Address) || key.Address.IsLinkLocalUnicast()) && s.named == nil {
		// A virtual server on a node IP that we neither want nor know: read once per
		// full sync whether our sets name it (a restart after its Service went).
		s.named = ReadOwnershipSets(s.k.IPSets)
	}
	return Owns(key, onDummy, s.cfg.NodeIPs, s.opts.ExcludeCIDRs, s.opts.NodePortMin, s.opts.NodePortMax, s.named)
}

// OwnershipEntries are the virtual servers our ownership sets (proxier.OwnershipSets)
// name in the kernel, indexed so that each lookup is one map read.
type OwnershipEntries struct {
	keys  map[kernel.VSKey]struct{} // by protocol, address and port
	ports map[kernel.VSKey]struct{} // by protocol and port only (bitmap:port NodePorts)
}

// ReadOwnershipSets lists proxier.OwnershipSets; a set that cannot be read names
// nothing.
func ReadOwnershipSets(ipsets kernel.IPSets) *OwnershipEntries {
	o := &OwnershipEntries{keys: map[kernel.VSKey]struct{}{}, ports: map[kernel.VSKey]struct{}{}}
	for _, set := range proxier.OwnershipSets() {
		entries, err := ipsets.ListEntries(set)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if k, anyAddress, ok := proxier.NamedKey(set, e); ok && anyAddress {
				o.ports[k] = struct{}{}
			} else if ok {
				o.keys[k] = struct{}{}
			}
		}
	}
	return o
}

// names reports whether one of the sets names k.
func (o *OwnershipEntries) names(k kernel.VSKey) bool {
	if o == nil {
		return false
	}
	if _, ok := o.keys[k]; ok {
		return true
	}
	_, ok := o.ports[kernel.VSKey{Protocol: k.Protocol, Port: k.Port}]
	return ok
}

// Owns is the one ownership rule, shared by pruning and `ipvs-proxier cleanup`: a
// virtual server is ours when it is on an address of our dummy interface, or is on a
// node IP and either named by one of our sets (a NodePort of any range, an external or
// load-balancer IP equal to a node IP: the kernel's own record of what we programmed,
// which survives a restart) or in the NodePort range, or is on a link-local address and
// named by our sets (kube-proxy's NodePorts there); and it is not in an excluded CIDR
// (--ipvs-exclude-cidrs, kube-proxy's rule for virtual servers made by others).
func Owns(key kernel.VSKey, onDummy bool, nodeIPs []netip.Addr, exclude []netip.Prefix, portMin, portMax uint16, named *OwnershipEntries) bool {
	if slices.ContainsFunc(exclude, func(p netip.Prefix) bool { return p.Contains(key.Address) }) {
		return false
	}
	if onDummy {
		return true
	}
	if key.Address.IsLinkLocalUnicast() {
		// We program no NodePorts on link-local addresses, but kube-proxy's IPVS mode
		// does (169.254.x on a pod veth gateway): after a takeover, those our sets name
		// are kube-proxy's leftovers, ours to remove.
		return named.names(key)
	}
	if !slices.Contains(nodeIPs, key.Address) {
		return false
	}
	return key.Port >= portMin && key.Port <= portMax || named.names(key)
}

// logNodeCIDRs says which pod ranges detectLocalMode NodeCIDR now uses.
func (s *Syncer) logNodeCIDRs(cidrs []netip.Prefix) {
	if len(cidrs) == 0 {
		s.log.Warn("detectLocalMode is NodeCIDR but the Node has no spec.podCIDRs yet: no traffic counts as pod traffic until it has",
			zap.String("node", s.cfg.NodeName))
		return
	}
	s.log.Info("detectLocalMode NodeCIDR: traffic from the Node's pod CIDRs counts as pod traffic", zap.Stringers("podCIDRs", cidrs))
}
