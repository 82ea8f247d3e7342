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
	f := &fullPass{}
	if err := s.prepareFull(f, keys, ph); err != nil {
		return err
	}
	if err := s.readKernel(f, ph); err != nil {
		return errors.Join(append(f.errs, err)...)
	}
	// The dumps that decide ownership worked: from here on, failures are retried one
	// object at a time (unless a change to every Service came during the reads).
	s.needFull, s.fullAgain, s.lastFull = s.fullAgain, false, s.fullBegan
	s.fullRound = f.round
	if s.heavy {
		s.lastHeavy = f.round
	}
	s.repairKernel(f, ph)
	return errors.Join(f.errs...)
}

// fullPass is what one full sync's steps hand on to the next.
type fullPass struct {
	// changed collects the set members whose desire changed since the last sync: the
	// ones that failed then, and those of the Services changed since. Sets whose count
	// matches are not listed, so these must be written explicitly.
	changed *proxier.Delta
	// listAll: the desired state was rebuilt, so every set is listed.
	listAll bool
	sets    []kernel.Set
	// dumpAll: every virtual server was dumped, else looked were looked up; dumpAddrs:
	// the dummy's addresses were dumped, into addrs.
	dumpAll, dumpAddrs bool
	looked             []kernel.VSKey
	addrs              []netip.Addr
	vss                []kernel.DumpedVS
	round              int
	errs               []error
}

// prepareFull brings the desired state up to date and makes sure the dummy device and
// every set exist, each set sized to its members.
func (s *Syncer) prepareFull(f *fullPass, keys map[proxier.ServiceKey]struct{}, ph *phases) error {
	f.changed = s.retry
	s.retry = proxier.NewDelta()
	s.sets.ForgetPending()
	s.sets.ForgetNamed() // read again, if needed, before this sync's sets are repaired
	f.listAll = s.refreshDesired(keys, f.changed)
	s.heavy = f.listAll || s.heavyDue(s.opts.CheckEvery, s.opts.BackgroundFull)
	ph.mark("translate")
	if hc := s.opts.HealthChecks; hc != nil {
		hc.SetAddresses(healthCheckAddrs(&s.cfg))
		hc.ReplaceHealthChecks(s.desired.HealthChecks())
	}
	if err := s.k.Addresses.EnsureDummy(s.cfg.DummyDevice); err != nil {
		return err
	}
	var errs []error
	f.sets, errs = s.sets.EnsureAll()
	f.errs = append(f.errs, errs...)
	if s.lastFull.IsZero() && !s.criticalDone && len(f.errs) == 0 {
		// The first full sync since the start: the critical Services before the rest.
		s.criticalDone = true
		s.programCritical(criticalKeys(s.src))
		ph.mark("critical")
	}
	return nil
}

// readKernel reads, with s.mu released (read.go): every virtual server dumped, or those
// checked this round looked up (lookup.go); the addresses, unless the address watch
// says they did not change (addrs/watch.go); the real servers due. It refreshes the cache.
func (s *Syncer) readKernel(f *fullPass, ph *phases) error {
	var err error
	dev := s.cfg.DummyDevice
	f.round = s.fullRound + 1
	f.dumpAll = s.dumpAllDue()
	if !f.dumpAll {
		f.looked = s.ipvs.LookupKeys(f.round)
	}
	f.dumpAddrs = s.addrs.Due(f.dumpAll)
	s.unlocked(func() {
		if f.dumpAddrs {
			f.addrs, err = s.addrs.Dump(dev)
		}
		if err == nil {
			if f.dumpAll {
				f.vss, err = s.k.IPVS.ListVirtualServers()
			} else {
				f.vss, err = s.k.IPVS.LookupVirtualServers(f.looked)
			}
		}
	})
	if err == nil && !f.dumpAll {
		var missing int
		if f.vss, missing = s.ipvs.LookedUp(f.looked, f.vss); missing > 0 {
			s.log.Info("Virtual servers gone from the kernel behind our back; reading them all", zap.Int("missing", missing), zap.Int("lookedUp", len(f.looked)))
			s.unlocked(func() { f.vss, err = s.k.IPVS.ListVirtualServers() })
			f.dumpAll = true
		}
	}
	s.dumpFailed, s.dumpedAll, s.dumpedAddrs = err != nil, f.dumpAll, f.dumpAddrs
	if err != nil {
		s.endRead()
		return err
	}
	ph.mark("dump")
	if f.dumpAddrs {
		s.addrs.Merge(f.addrs)
	} else if f.dumpAll { // the lookups found drift: everything is compared, the cached addresses too
		f.addrs = s.addrs.Cached() // addrs/watch.go
	}
	reads := s.ipvs.RealServersToRead(f.vss, f.round)
	s.unlocked(func() { s.ipvs.ReadRealServers(f.vss, reads) })
	f.errs = append(f.errs, s.ipvs.RefreshCache(f.vss, f.dumpAll, f.round, reads, s.endRead())...)
	s.ipvs.RefreshStats()
	ph.mark("readRealServers")
	return nil
}

// repairKernel writes every difference: the addresses, the sets, the virtual and real
// servers, the iptables rules; then the UDP conntrack reconcile.
func (s *Syncer) repairKernel(f *fullPass, ph *phases) {
	// The addresses first: if many, they are written alongside the rest (addrs/batch.go).
	if f.dumpAll || f.dumpAddrs {
		s.addrs.ApplyAll(f.addrs)
	} else {
		for a := range f.changed.Addresses {
			s.addrs.Apply(a)
		}
	}
	batch := s.addrs.Start()
	f.errs = append(f.errs, s.syncSets(f.sets, f.changed, f.listAll, ph))
	ph.mark("sets")
	if rsDue := s.ipvs.RealServersDue(f.changed, f.listAll, f.round); f.dumpAll {
		s.ipvs.ApplyAll(rsDue, &f.errs)
	} else {
		s.ipvs.ApplyLooked(f.looked, f.changed, rsDue, &f.errs)
	}
	ph.mark("ipvs")
	s.sets.Finish(&f.errs)
	s.addrs.Finish(batch, &f.errs)
	s.addrs.Flush(&f.errs)
	ph.mark("addresses")
	f.errs = append(f.errs, s.rules.Sync(true))
	ph.mark("iptables")
	s.rules.ReconcileUDP()
	ph.mark("conntrack")
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
	s.ipvs.RebuildStats()
	s.rebuildDesired(s.src.ServiceKeys())
	s.built = true
	return true
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
