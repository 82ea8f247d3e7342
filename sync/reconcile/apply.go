package reconcile

import (
	"errors"
	"maps"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// apply makes the kernel objects named in delta match the desired state. It compares
// with what we believe is programmed (refreshed by every full sync), so an unchanged
// object costs nothing. Every failure is returned, and what failed is kept for the next
// sync to retry (Syncer.retry), which the Runner schedules early; it is not a full sync.
// ph times its steps.
func (s *Syncer) apply(delta *proxier.Delta, ph *phases) error {
	var errs []error
	s.ipvs.Apply(maps.Keys(delta.VirtualServers), &errs)
	ph.mark("ipvs")
	for a := range delta.Addresses {
		s.addrs.Apply(a)
	}
	s.addrs.Flush(&errs)
	ph.mark("addresses")
	errs = append(errs, s.sets.WriteChanged(delta.Members))
	ph.mark("members")
	if delta.RulesChanged {
		errs = append(errs, s.rules.Sync(false))
	}
	ph.mark("iptables")
	return errors.Join(errs...)
}

// writeQueue is the current apply's batched writes, and what to retry.
type writeQueue struct {
	// retry holds the objects whose last write failed; the next sync redoes them.
	retry *proxier.Delta
}
