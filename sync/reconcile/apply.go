package reconcile

import (
	"errors"
	"iter"
	"maps"
	"net/netip"
	"slices"
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
	s.applyVirtualServers(maps.Keys(delta.VirtualServers), nil, &errs)
	s.flushRealServers(&errs)
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

// applyVirtualServers syncs the virtual servers keys yields (each once) in two steps:
// every virtual-server write they need as one batch, then the real servers of each,
// queued for flushRealServers. A failure is added to errs and its key queued for retry.
// rsDue, if not nil, says which unwritten virtual servers' real servers may differ from
// the desired ones (the others are skipped in the second step); nil means all.
func (s *Syncer) applyVirtualServers(keys iter.Seq[kernel.VSKey], rsDue func(kernel.VSKey) bool, errs *[]error) {
	var ops []kernel.VirtualServerOp
	for key := range keys {
		want, _, ok := s.desired.VirtualServer(key)
		have := s.vs.Get(key)
		switch {
		case !ok && have == nil:
		case !ok:
			ops = append(ops, kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: key}, Kind: kernel.OpDelete})
		case have == nil:
			ops = append(ops, kernel.VirtualServerOp{VS: want.VirtualServer})
		case have.settings != settingsOf(want.VirtualServer):
			ops = append(ops, kernel.VirtualServerOp{VS: want.VirtualServer, Kind: kernel.OpUpdate})
		}
	}
	if adopted := s.writeVirtualServers(ops, errs); len(adopted) > 0 {
		s.writeVirtualServers(adopted, errs)
	}
	var written map[kernel.VSKey]struct{}
	if rsDue != nil && len(ops) > 0 {
		written = make(map[kernel.VSKey]struct{}, len(ops))
		for _, op := range ops {
			written[op.VS.VSKey] = struct{}{}
		}
	}
	for key := range keys {
		if _, w := written[key]; rsDue != nil && !w && !rsDue(key) {
			continue
		}
		want, _, ok := s.desired.VirtualServer(key)
		if have := s.vs.Get(key); ok && have != nil {
			s.touchVS(key) // its real servers may change
			if err := s.syncRealServers(key, have, want.RealServers); err != nil {
				s.failVS(key, err, errs)
			}
		}
	}
}

// writeVirtualServers sends ops as one batch and updates the cache from the outcomes.
// It returns the updates that correct virtual servers someone made behind our back,
// which it adopted (their real servers read from the kernel) when their add failed as
// existing.
func (s *Syncer) writeVirtualServers(ops []kernel.VirtualServerOp, errs *[]error) (adopted []kernel.VirtualServerOp) {
	if len(ops) == 0 {
		return nil
	}
	for i, err := range s.k.IPVS.WriteVirtualServers(ops) {
		op := ops[i]
		key := op.VS.VSKey
		switch {
		case op.Kind == kernel.OpAdd && errors.Is(err, kernel.ErrExist):
			rss, lerr := s.k.IPVS.ListRealServers(key)
			if lerr != nil {
				s.failVS(key, lerr, errs)
				continue
			}
			s.setVS(key, &programmedVS{rss: newRealServers(rss)})
			adopted = append(adopted, kernel.VirtualServerOp{VS: op.VS, Kind: kernel.OpUpdate})
		case err != nil:
			s.failVS(key, err, errs)
		case op.Kind == kernel.OpAdd:
			want, _, _ := s.desired.VirtualServer(key)
			s.setVS(key, &programmedVS{settings: settingsOf(op.VS), rss: make(realServers, 0, want.RealServers.Len())})
		case op.Kind == kernel.OpUpdate:
			s.vs.Get(key).settings = settingsOf(op.VS)
			s.touchVS(key)
		case op.Kind == kernel.OpDelete:
			s.deletedVS(key)
		}
	}
	return adopted
}

// failVS records the failure of a virtual server's sync in errs and queues it for retry.
// A wanted one is forgotten: the retry re-adds it, and "exists" makes it re-read the
// kernel's real servers.
func (s *Syncer) failVS(key kernel.VSKey, err error, errs *[]error) {
	if !s.isolated(err, refusedWrite{kind: "virtual_server", vs: key}) {
		*errs = append(*errs, err)
	}
	s.retry.VirtualServers[key] = struct{}{}
	if _, _, wanted := s.desired.VirtualServer(key); wanted {
		s.dropVS(key)
	}
}

// deletedVS forgets a virtual server we deleted: its cache entry, its draining real
// servers, and for UDP its conntrack flows.
func (s *Syncer) deletedVS(key kernel.VSKey) {
	s.dropVS(key)
	for dk := range s.drain {
		if dk.vs == key {
			delete(s.drain, dk)
		}
	}
	if key.Protocol == kernel.UDP {
		s.clearUDP(netip.AddrPortFrom(key.Address, key.Port), netip.AddrPort{})
	}
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

func ignore(err, sentinel error) error {
	if errors.Is(err, sentinel) {
		return nil
	}
	return err
}

// syncRealServers adds, re-weights and removes the real servers of one virtual server.
func (s *Syncer) syncRealServers(key kernel.VSKey, have *programmedVS, want proxier.RealServerList) error {
	wanted := make(map[netip.AddrPort]struct{}, want.Len())
	for rs := range want.All() {
		ap := rs.AddrPort()
		wanted[ap] = struct{}{}
		cur, ok := have.rss.get(ap)
		switch {
		case !ok:
			s.queueRS(kernel.RealServerOp{VS: key, RS: rs}, nil) // an existing one is updated
		case cur.Weight != rs.Weight:
			// A draining server that is wanted again is restored in place, keeping its
			// connections (kube-proxy's graceful-termination manager, pkg/proxy/ipvs/graceful_termination.go,
			// deletes and re-adds it).
			s.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpUpdate}, nil)
		default:
			continue
		}
		delete(s.drain, drainKey{key, ap})
		s.putRS(have, rs)
	}
	var gone []kernel.RealServer
	for _, cur := range have.rss {
		if _, ok := wanted[cur.addrPort()]; !ok {
			gone = append(gone, cur.realServer())
		}
	}
	if len(gone) > 0 {
		return s.removeRealServers(key, have, gone)
	}
	return nil
}

// queueRS adds a real-server write to the batch flushRealServers sends; done, if not
// nil, runs once it succeeded. The cache is updated by the caller as if it will: a
// failure makes the flush forget the whole virtual server, whose retry re-reads it.
func (s *Syncer) queueRS(op kernel.RealServerOp, done func()) {
	s.rsQueue = append(s.rsQueue, queuedRS{op, done})
}

type queuedRS struct {
	op   kernel.RealServerOp
	done func()
}

// flushRealServers sends the queued real-server writes as one batch, in queue order
// (so a virtual server's new real servers land before its old ones leave). Each failure
// is added to errs, and its virtual server is forgotten and queued for retry.
func (s *Syncer) flushRealServers(errs *[]error) {
	if len(s.rsQueue) == 0 {
		return
	}
	ops := make([]kernel.RealServerOp, len(s.rsQueue))
	for i, q := range s.rsQueue {
		ops[i] = q.op
	}
	for i, err := range s.k.IPVS.WriteRealServers(ops) {
		switch {
		case err != nil:
			if !s.isolated(err, refusedWrite{kind: "real_server", vs: ops[i].VS}) {
				*errs = append(*errs, err)
			}
			s.retry.VirtualServers[ops[i].VS] = struct{}{}
			if _, _, wanted := s.desired.VirtualServer(ops[i].VS); wanted {
				s.dropVS(ops[i].VS)
			}
		case s.rsQueue[i].done != nil:
			s.rsQueue[i].done()
		}
	}
	if cap(s.rsQueue) > 1024 {
		s.rsQueue = nil // a cold start's queue is ~13 MiB at 30,000 Services: not kept
	} else {
		clear(s.rsQueue)
		s.rsQueue = s.rsQueue[:0]
	}
}

// applyEverything applies every virtual server in the kernel or desired, without a
// delta: the cache holds exactly the kernel's (ours) then. rsDue is
// applyVirtualServers'. The addresses are compared before (syncFull: every one bound,
// as dumped, or desired). ph times it.
func (s *Syncer) applyEverything(rsDue func(kernel.VSKey) bool, errs *[]error, ph *phases) {
	// Each key once: the cached ones (ours in the kernel), then the desired ones not
	// cached.
	keys := make([]kernel.VSKey, 0, max(s.vs.Len(), s.desired.VirtualServerCount()))
	for key := range s.vs.Keys() {
		keys = append(keys, key)
	}
	for key := range s.desired.VirtualServerKeySeq() {
		if s.vs.Get(key) == nil {
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
		if !s.addrs.Has(a) {
			s.applyAddress(a)
		}
	}
}

// writeQueue is the current apply's batched writes, and what to retry.
type writeQueue struct {
	// retry holds the objects whose last write failed; the next sync redoes them.
	retry *proxier.Delta
	// rsQueue holds the real-server writes of the current apply, sent as one batch.
	rsQueue []queuedRS
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
