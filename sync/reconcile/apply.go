package reconcile

import (
	"errors"
	"maps"
	"net/netip"
	"sync"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
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
		s.applyAddress(a)
	}
	s.flushAddresses(&errs)
	ph.mark("addresses")
	var ops []kernel.SetOp
	for m := range delta.Members {
		if _, pending := s.pendingSets[m.Set]; pending {
			continue // diffed once the set is listed
		}
		ops = append(ops, s.memberOp(m))
	}
	errs = append(errs, s.writeMembers(ops))
	ph.mark("members")
	if delta.RulesChanged {
		errs = append(errs, s.syncRules(false))
	}
	ph.mark("iptables")
	return errors.Join(errs...)
}

// applyAddress queues the bind or unbind that makes address a as desired, if any; the
// cache is updated as if it will succeed (flushAddresses undoes it on failure).
func (s *Syncer) applyAddress(a netip.Addr) {
	want := s.desired.HasAddress(a)
	have := s.addrs.Has(a)
	if want != have {
		s.touchAddr(a)
	}
	switch {
	case want && !have:
		s.addrQueue = append(s.addrQueue, kernel.AddressOp{Addr: a})
		s.addrs.Set(a, struct{}{})
	case !want && have:
		s.addrQueue = append(s.addrQueue, kernel.AddressOp{Addr: a, Unbind: true})
		s.addrs.Delete(a)
	}
}

// flushAddresses sends the queued address writes as one batch, after any a full sync
// sends in the background (startAddresses). A failure is added to errs, its cache entry
// restored, and the address queued for retry.
func (s *Syncer) flushAddresses(errs *[]error) {
	if len(s.addrQueue) == 0 {
		return
	}
	ops := s.addrQueue
	s.addrQueue = nil
	// A full sync queues no address writes after its batch.
	s.lockReleased(&s.addrWrite, s.onAddrWait)
	results := s.k.Addresses.WriteAddresses(s.cfg.DummyDevice, ops)
	s.addrWrite.Unlock()
	s.addressesFailed(ops, results, errs)
}

// addressesFailed handles the failures among the results of address writes ops.
func (s *Syncer) addressesFailed(ops []kernel.AddressOp, results []error, errs *[]error) {
	for i, err := range results {
		if err == nil {
			continue
		}
		op := ops[i]
		if !s.isolated(err, refusedWrite{kind: "address", addr: op.Addr}) {
			*errs = append(*errs, err)
		}
		s.retry.Addresses[op.Addr] = struct{}{}
		if op.Unbind {
			s.addrs.Set(op.Addr, struct{}{})
		} else {
			s.addrs.Delete(op.Addr)
		}
	}
}

// applyAllAddresses compares every address bound (addrs) or desired.
func (s *Syncer) applyAllAddresses(addrs []netip.Addr) {
	for _, a := range addrs {
		s.applyAddress(a)
	}
	for a := range s.desired.AddressSeq() {
		if !s.addrs.Has(a) {
			s.applyAddress(a)
		}
	}
}

// writeQueue is the current apply's batched writes, and what to retry.
type writeQueue struct {
	// retry holds the objects whose last write failed; the next sync redoes them.
	retry *proxier.Delta
	// addrQueue holds the address writes of the current apply, sent as one batch.
	addrQueue []kernel.AddressOp
	// addrWrite is held while address writes are sent, so that those of a partial sync
	// wait for a full sync's batch in the background (addrbatch.go).
	addrWrite sync.Mutex
	// memberWrite is held while set-member writes are sent, for the same reason;
	// memberBatch is the running full sync's batch (memberbatch.go).
	memberWrite sync.Mutex
	memberBatch *memberBatch
}

// kernelCache is what we programmed of the addresses, as the last syncs left it.
type kernelCache struct {
	addrs kernel.AddrMap[struct{}]
	// dumpFailed is set when the last full sync's read of the virtual servers failed.
	dumpFailed bool
}
