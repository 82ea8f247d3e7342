package ipvs

import (
	"errors"
	"iter"
	"net/netip"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Apply makes the virtual servers keys yields (each once) and their real servers as
// desired: every virtual-server write they need as one batch, then every real-server
// write as one more. It compares with the cache, so an unchanged one costs nothing. A
// failure is added to errs, and its virtual server is forgotten and queued for retry
// (Config.Failed).
func (r *Reconciler) Apply(keys iter.Seq[kernel.VSKey], errs *[]error) {
	r.applyVirtualServers(keys, nil, errs)
	r.flushRealServers(errs)
}

// applyVirtualServers syncs the virtual servers keys yields (each once) in two steps:
// every virtual-server write they need as one batch, then the real servers of each,
// queued for flushRealServers. A failure is added to errs and its key queued for retry.
// rsDue, if not nil, says which unwritten virtual servers' real servers may differ from
// the desired ones (the others are skipped in the second step); nil means all.
func (r *Reconciler) applyVirtualServers(keys iter.Seq[kernel.VSKey], rsDue func(kernel.VSKey) bool, errs *[]error) {
	var ops []kernel.VirtualServerOp
	for key := range keys {
		want, _, ok := r.cfg.Desired().VirtualServer(key)
		have := r.vs.Get(key)
		switch {
		case !ok && have == nil:
		case !ok:
			ops = append(ops, kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: key}, Kind: kernel.OpDelete})
		case have == nil:
			ops = append(ops, kernel.VirtualServerOp{VS: want.VirtualServer})
		case !have.settings.Equal(want.VSSettings):
			ops = append(ops, kernel.VirtualServerOp{VS: want.VirtualServer, Kind: kernel.OpUpdate})
		}
	}
	if adopted := r.writeVirtualServers(ops, errs); len(adopted) > 0 {
		r.writeVirtualServers(adopted, errs)
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
		want, _, ok := r.cfg.Desired().VirtualServer(key)
		if have := r.vs.Get(key); ok && have != nil {
			r.touchVS(key) // its real servers may change
			if err := r.syncRealServers(key, have, want.RealServers); err != nil {
				r.failed("virtual_server", key, err, errs)
			}
		}
	}
}

// writeVirtualServers sends ops as one batch and updates the cache from the outcomes.
// It returns the updates that correct virtual servers someone made behind our back,
// which it adopted (their real servers read from the kernel) when their add failed as
// existing.
func (r *Reconciler) writeVirtualServers(ops []kernel.VirtualServerOp, errs *[]error) (adopted []kernel.VirtualServerOp) {
	if len(ops) == 0 {
		return nil
	}
	for i, err := range r.cfg.IPVS.WriteVirtualServers(ops) {
		op := ops[i]
		key := op.VS.VSKey
		switch {
		case op.Kind == kernel.OpAdd && errors.Is(err, kernel.ErrExist):
			rss, lerr := r.cfg.IPVS.ListRealServers(key)
			if lerr != nil {
				r.failed("virtual_server", key, lerr, errs)
				continue
			}
			r.setVS(key, &programmedVS{rss: newRealServers(rss)})
			adopted = append(adopted, kernel.VirtualServerOp{VS: op.VS, Kind: kernel.OpUpdate})
		case err != nil:
			r.failed("virtual_server", key, err, errs)
		case op.Kind == kernel.OpAdd:
			want, _, _ := r.cfg.Desired().VirtualServer(key)
			r.setVS(key, &programmedVS{settings: op.VS.VSSettings.Own(), rss: make(realServers, 0, want.RealServers.Len())})
		case op.Kind == kernel.OpUpdate:
			r.vs.Get(key).settings = op.VS.VSSettings.Own()
			r.touchVS(key)
		case op.Kind == kernel.OpDelete:
			r.deletedVS(key)
		}
	}
	return adopted
}

// failed handles a failed write of kind ("virtual_server", "real_server") to the
// virtual server key or its real servers: err added to errs unless the kernel refused
// it, the virtual server queued for retry and, if wanted, forgotten: the retry re-adds
// it, and "exists" makes it re-read the kernel's real servers.
func (r *Reconciler) failed(kind string, key kernel.VSKey, err error, errs *[]error) {
	if !r.cfg.Failed(kind, key, err) {
		*errs = append(*errs, err)
	}
	if _, _, wanted := r.cfg.Desired().VirtualServer(key); wanted {
		r.dropVS(key)
	}
}

// deletedVS forgets a virtual server we deleted: its cache entry, its draining real
// servers, and for UDP its conntrack flows.
func (r *Reconciler) deletedVS(key kernel.VSKey) {
	r.dropVS(key)
	for dk := range r.drain {
		if dk.vs == key {
			delete(r.drain, dk)
		}
	}
	if key.Protocol == kernel.UDP {
		r.clearUDP(netip.AddrPortFrom(key.Address, key.Port), netip.AddrPort{})
	}
}

// syncRealServers adds, re-weights and removes the real servers of one virtual server.
func (r *Reconciler) syncRealServers(key kernel.VSKey, have *programmedVS, want proxier.RealServerList) error {
	wanted := make(map[netip.AddrPort]struct{}, want.Len())
	for rs := range want.All() {
		ap := rs.AddrPort()
		wanted[ap] = struct{}{}
		cur, ok := have.rss.get(ap)
		switch {
		case !ok:
			r.queueRS(kernel.RealServerOp{VS: key, RS: rs}, nil) // an existing one is updated
		case cur.Weight != rs.Weight:
			// A draining server that is wanted again is restored in place, keeping its
			// connections (kube-proxy's graceful-termination manager, pkg/proxy/ipvs/graceful_termination.go,
			// deletes and re-adds it).
			r.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpUpdate}, nil)
		default:
			continue
		}
		delete(r.drain, drainKey{key, ap})
		r.putRS(have, rs)
	}
	var gone []kernel.RealServer
	for _, cur := range have.rss {
		if _, ok := wanted[cur.addrPort()]; !ok {
			gone = append(gone, cur.realServer())
		}
	}
	if len(gone) > 0 {
		return r.removeRealServers(key, have, gone)
	}
	return nil
}

// queueRS adds a real-server write to the batch flushRealServers sends; done, if not
// nil, runs once it succeeded. The cache is updated by the caller as if it will: a
// failure makes the flush forget the whole virtual server, whose retry re-reads it.
func (r *Reconciler) queueRS(op kernel.RealServerOp, done func()) {
	r.rsQueue = append(r.rsQueue, queuedRS{op, done})
}

type queuedRS struct {
	op   kernel.RealServerOp
	done func()
}

// flushRealServers sends the queued real-server writes as one batch, in queue order
// (so a virtual server's new real servers land before its old ones leave). Each failure
// is added to errs, and its virtual server is forgotten and queued for retry.
func (r *Reconciler) flushRealServers(errs *[]error) {
	if len(r.rsQueue) == 0 {
		return
	}
	ops := make([]kernel.RealServerOp, len(r.rsQueue))
	for i, q := range r.rsQueue {
		ops[i] = q.op
	}
	for i, err := range r.cfg.IPVS.WriteRealServers(ops) {
		switch {
		case err != nil:
			r.failed("real_server", ops[i].VS, err, errs)
		case r.rsQueue[i].done != nil:
			r.rsQueue[i].done()
		}
	}
	if cap(r.rsQueue) > 1024 {
		r.rsQueue = nil // a cold start's queue is ~13 MiB at 30,000 Services: not kept
	} else {
		clear(r.rsQueue)
		r.rsQueue = r.rsQueue[:0]
	}
}

// ApplyAll applies every virtual server in the kernel or desired, without a delta: the
// cache holds exactly the kernel's (ours) then, after a full sync's dump of them all.
// rsDue is RealServersDue's.
func (r *Reconciler) ApplyAll(rsDue func(kernel.VSKey) bool, errs *[]error) {
	// Each key once: the cached ones (ours in the kernel), then the desired ones not
	// cached.
	desired := r.cfg.Desired()
	keys := make([]kernel.VSKey, 0, max(r.vs.Len(), desired.VirtualServerCount()))
	for key := range r.vs.Keys() {
		keys = append(keys, key)
	}
	for key := range desired.VirtualServerKeySeq() {
		if r.vs.Get(key) == nil {
			keys = append(keys, key)
		}
	}
	r.applyInChunks(keys, rsDue, errs)
}

// ApplyLooked is ApplyAll for a full sync that looked up instead of dumping: it
// compares and writes only the virtual servers it looked up and those whose desire
// changed since the last sync (changed, the last sync's failed writes included). Every
// other cached virtual server is what the last sync that touched it made it, and this
// round read nothing new of it from the kernel, so comparing it with its desire finds
// nothing: at 30,000 Services that compare of 45,000 virtual servers (and as many
// addresses) was a third of the time of such a round (BenchmarkPeriodicFullSync30k). The
// CheckEvery-th round, which dumps, compares everything.
func (r *Reconciler) ApplyLooked(looked []kernel.VSKey, changed *proxier.Delta, rsDue func(kernel.VSKey) bool, errs *[]error) {
	keys := make([]kernel.VSKey, 0, len(looked)+len(changed.VirtualServers))
	seen := make(map[kernel.VSKey]struct{}, cap(keys))
	for _, key := range looked {
		seen[key] = struct{}{}
		keys = append(keys, key)
	}
	for key := range changed.VirtualServers {
		if _, dup := seen[key]; !dup {
			keys = append(keys, key)
		}
	}
	r.applyInChunks(keys, rsDue, errs)
}

// ApplyChunk is how many virtual servers a full sync compares and writes under one hold
// of the syncer's lock (ApplyAll). At 30,000 Services the whole compare held the lock for
// seconds in the emulated VM, and a change arriving then waited for all of it: with the
// reads unlocked, that was the rest of the change p99 (3.6 s against a p50 of 1.1 s,
// `make bench-scale`).
const ApplyChunk = 1024

// applyInChunks compares and writes the virtual servers keys (each once) a chunk at a
// time, with the lock released between chunks (Config.Yield). Each chunk decides and
// writes under one hold, so no decision outlives a partial sync that may change its key.
func (r *Reconciler) applyInChunks(keys []kernel.VSKey, rsDue func(kernel.VSKey) bool, errs *[]error) {
	for chunk := range slices.Chunk(keys, ApplyChunk) {
		r.applyVirtualServers(slices.Values(chunk), rsDue, errs)
		r.flushRealServers(errs)
		if len(chunk) == ApplyChunk {
			r.cfg.Yield()
		}
	}
}
