package reconcile

import (
	"errors"
	"iter"
	"maps"
	"net/netip"

	"go.uber.org/zap"

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
		have := s.vs[key]
		switch {
		case !ok && have == nil:
		case !ok:
			ops = append(ops, kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: key}, Kind: kernel.OpDelete})
		case have == nil:
			ops = append(ops, kernel.VirtualServerOp{VS: want.VirtualServer})
		case !have.vs.Equal(want.VirtualServer):
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
		if have := s.vs[key]; ok && have != nil {
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
			s.setVS(key, &programmedVS{vs: op.VS, rss: make(realServers, 0, len(want.RealServers))})
		case op.Kind == kernel.OpUpdate:
			s.vs[key].vs = op.VS
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
	*errs = append(*errs, err)
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
	_, have := s.addrs[a]
	if want != have {
		s.touchAddr(a)
	}
	switch {
	case want && !have:
		s.addrQueue = append(s.addrQueue, kernel.AddressOp{Addr: a})
		s.addrs[a] = struct{}{}
	case !want && have:
		s.addrQueue = append(s.addrQueue, kernel.AddressOp{Addr: a, Unbind: true})
		delete(s.addrs, a)
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
	if !s.addrWrite.TryLock() {
		// A full sync's batch is being sent: wait for it with s.mu released, so that the
		// full sync goes on meanwhile (it queues no address writes after its batch).
		s.mu.Unlock()
		if s.onAddrWait != nil {
			s.onAddrWait()
		}
		s.addrWrite.Lock()
		s.mu.Lock()
	}
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
		*errs = append(*errs, err)
		op := ops[i]
		s.retry.Addresses[op.Addr] = struct{}{}
		if op.Unbind {
			s.addrs[op.Addr] = struct{}{}
		} else {
			delete(s.addrs, op.Addr)
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
func (s *Syncer) syncRealServers(key kernel.VSKey, have *programmedVS, want []kernel.RealServer) error {
	wanted := make(map[netip.AddrPort]struct{}, len(want))
	for _, rs := range want {
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
			*errs = append(*errs, err)
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

// removeRealServers takes real servers out of service. UDP ones go at once, with their
// conntrack flows (kubernetes#71514); TCP and SCTP ones with live connections drop to
// weight 0 and drain, bounded by GracefulTimeout (kubernetes#57841). The writes are
// queued behind the virtual server's additions.
func (s *Syncer) removeRealServers(key kernel.VSKey, have *programmedVS, gone []kernel.RealServer) error {
	vip := netip.AddrPortFrom(key.Address, key.Port)
	if key.Protocol == kernel.UDP {
		for _, rs := range gone {
			ap := rs.AddrPort()
			s.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete}, func() { s.clearUDP(vip, ap) })
			s.delRS(have, ap)
		}
		return nil
	}
	var fresh []kernel.RealServer
	for _, rs := range gone {
		if _, draining := s.drain[drainKey{key, rs.AddrPort()}]; !draining {
			fresh = append(fresh, rs)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	conns, err := s.connections(key)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	for _, rs := range fresh {
		ap := rs.AddrPort()
		if conns[ap] == 0 {
			s.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete}, nil)
			s.delRS(have, ap)
			continue
		}
		rs.Weight = 0
		s.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpUpdate}, nil)
		s.putRS(have, rs)
		s.drain[drainKey{key, ap}] = now.Add(s.opts.GracefulTimeout)
	}
	return nil
}

// connections lists the connection counts of a virtual server's real servers.
func (s *Syncer) connections(key kernel.VSKey) (map[netip.AddrPort]int, error) {
	rss, err := s.k.IPVS.ListRealServers(key)
	if err != nil {
		return nil, err
	}
	out := make(map[netip.AddrPort]int, len(rss))
	for _, rs := range rss {
		out[rs.AddrPort()] = rs.Connections()
	}
	return out, nil
}

// reapDrained deletes draining real servers whose connections are gone or whose
// GracefulTimeout passed.
func (s *Syncer) reapDrained() error {
	if len(s.drain) == 0 {
		return nil
	}
	byVS := map[kernel.VSKey][]netip.AddrPort{}
	for dk := range s.drain {
		byVS[dk.vs] = append(byVS[dk.vs], dk.dest)
	}
	now := s.opts.Now()
	var errs []error
	var ops []kernel.RealServerOp
	for key, dests := range byVS {
		have := s.vs[key]
		if have == nil {
			for _, d := range dests {
				delete(s.drain, drainKey{key, d})
			}
			continue
		}
		conns, err := s.connections(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range dests {
			if conns[d] > 0 && now.Before(s.drain[drainKey{key, d}]) {
				continue
			}
			rs, ok := have.rss.get(d)
			if !ok { // gone already: nothing to delete
				delete(s.drain, drainKey{key, d})
				continue
			}
			ops = append(ops, kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete})
		}
	}
	if len(ops) == 0 {
		return errors.Join(errs...)
	}
	// One batch for every server due, as apply sends its writes.
	for i, err := range s.k.IPVS.WriteRealServers(ops) {
		op := ops[i]
		// A virtual server deleted behind our back took its servers with it.
		if err := ignore(err, kernel.ErrNotFound); err != nil {
			errs = append(errs, err)
			continue
		}
		s.touchVS(op.VS)
		s.delRS(s.vs[op.VS], op.RS.AddrPort())
		delete(s.drain, drainKey{op.VS, op.RS.AddrPort()})
	}
	return errors.Join(errs...)
}

// clearUDP deletes stale UDP conntrack flows; a failure is logged, not retried, since
// the flows expire on their own.
func (s *Syncer) clearUDP(vip, endpoint netip.AddrPort) {
	if s.k.Conntrack == nil {
		return
	}
	if err := s.k.Conntrack.ClearUDP(vip, endpoint); err != nil {
		s.log.Warn("Cannot clear stale UDP conntrack flows", zap.Stringer("vip", vip), zap.Stringer("endpoint", endpoint), zap.Error(err))
	}
}

// memberOp is the write that makes the kernel agree with the desire for m. There is no
// cache of what the sets hold (it was a second copy of every member, ~20 MiB at 30,000
// Services): a member is in a delta because its desire changed, so the write is almost
// always needed, and adds and deletes are idempotent.
func (s *Syncer) memberOp(m kernel.Member) kernel.SetOp {
	return kernel.SetOp{Set: m.Set, Entry: m.Entry, Delete: !s.desired.HasMember(m)}
}

// writeMembers sends ops as one batch; each failed one is queued for retry.
func (s *Syncer) writeMembers(ops []kernel.SetOp) error {
	if len(ops) == 0 {
		return nil
	}
	s.growSets(ops)
	var errs []error
	for i, err := range s.k.IPSets.WriteEntries(ops) {
		if err != nil {
			errs = append(errs, err)
			s.retry.Members[kernel.Member{Set: ops[i].Set, Entry: ops[i].Entry}] = struct{}{}
		}
	}
	return errors.Join(errs...)
}

// syncRules restores our iptables chains when the rendered text changed, or, with
// checkDrift, when the kernel's copy no longer matches what we last applied.
func (s *Syncer) syncRules(checkDrift bool) error {
	var errs []error
	for _, f := range s.cfg.Families {
		text := proxier.RenderRules(&s.cfg, f, s.desired.OutFilters())
		if _, known := s.rules[f]; !known && checkDrift {
			// First look after a start: adopt rules that already read as ours. When the
			// backend's saved form differs from ours, the restore below is one atomic
			// iptables-restore transaction, so traffic never sees a gap.
			if cur, err := s.k.Iptables.Save(f); err == nil && cur == text {
				s.rules[f], s.saved[f] = text, cur
				continue
			}
		}
		if text == s.rules[f] && checkDrift {
			cur, err := s.k.Iptables.Save(f)
			if err != nil {
				errs = append(errs, err)
				s.needFull = true
				continue
			}
			if cur == s.saved[f] {
				continue
			}
			s.log.Info("iptables rules drifted; restoring", zap.Stringer("family", f))
		} else if text == s.rules[f] {
			continue
		}
		if err := s.k.Iptables.Restore(f, text); err != nil {
			s.opts.Metrics.IptablesRestoreFailed(f)
			delete(s.rules, f)
			errs = append(errs, err)
			s.retry.RulesChanged = true
			continue
		}
		s.rules[f] = text
		saved, err := s.k.Iptables.Save(f)
		if err != nil {
			errs = append(errs, err)
			delete(s.rules, f)
			s.retry.RulesChanged = true
			continue
		}
		s.saved[f] = saved
	}
	return errors.Join(errs...)
}
