package reconcile

import (
	"net/netip"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// A full sync reads the kernel (the address and virtual-server dumps, then the real
// servers of the virtual servers it checks) with s.mu released: at 30,000 Services the
// reads took most of a 100 s full sync in the VM, and every change that came meanwhile
// waited for them. A partial sync may run in that window. Its writes make the full
// sync's dumps stale for what it wrote, so it records what it wrote (touched), and the
// full sync keeps the cache's state for those keys instead of the dump's. One more
// effect: the kernel dumps virtual servers by position in its service table
// (ip_vs_genl_dump_services skips the entries already sent), so a delete meanwhile can
// hide an untouched virtual server from the dump; the full sync then forgets it, and
// re-adding it meets "exists", which adopts it (reads its real servers): a few extra
// writes, never a wrong state.

// touched names what syncs wrote while a full sync read the kernel.
type touched struct {
	vs    map[kernel.VSKey]struct{}
	addrs map[netip.Addr]struct{}
}

func (t *touched) hasVS(k kernel.VSKey) bool {
	_, ok := t.vs[k]
	return ok
}

// touchVS records a cache change of the virtual server k (or of its real servers)
// while a full sync reads the kernel.
func (s *Syncer) touchVS(k kernel.VSKey) {
	if s.touched != nil {
		s.touched.vs[k] = struct{}{}
	}
}

// touchAddr records a cache change of the address a while a full sync reads.
func (s *Syncer) touchAddr(a netip.Addr) {
	if s.touched != nil {
		s.touched.addrs[a] = struct{}{}
	}
}

// unlocked runs read with s.mu released, recording from then on what syncs write
// (until endRead). Called with s.mu held; returns with it held.
func (s *Syncer) unlocked(read func()) {
	if s.touched == nil {
		s.touched = &touched{vs: map[kernel.VSKey]struct{}{}, addrs: map[netip.Addr]struct{}{}}
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	read()
}

// applyChunk is how many virtual servers a full sync compares and writes under one hold
// of s.mu (applyEverything). At 30,000 Services the whole compare held the lock for
// seconds in the emulated VM, and a change arriving then waited for all of it: with the
// reads unlocked, that was the rest of the change p99 (3.6 s against a p50 of 1.1 s,
// `make bench-scale`).
const applyChunk = 1024

// yieldLock releases s.mu and takes it again, so that a partial sync waiting for it goes
// first: Go's mutex hands itself to a goroutine that has waited over a millisecond
// (sync.Mutex, "starvation mode").
func (s *Syncer) yieldLock() {
	s.mu.Unlock()
	if s.onYield != nil {
		s.onYield()
	}
	s.mu.Lock()
}

// endRead stops recording writes and returns what was written since the read began
// (empty if no read did).
func (s *Syncer) endRead() *touched {
	t := s.touched
	s.touched = nil
	if t == nil {
		t = &touched{}
	}
	return t
}

// mergeAddresses makes the address cache the dumped addresses, except for those a sync
// wrote during the read, which keep their cached state.
func (s *Syncer) mergeAddresses(dumped []netip.Addr) {
	old := s.addrs
	s.addrs = kernel.AddrMap[struct{}]{}
	s.addrs.Clear(len(dumped))
	for _, a := range dumped {
		s.addrs.Set(a, struct{}{})
	}
	if s.touched == nil {
		return
	}
	for a := range s.touched.addrs {
		if old.Has(a) {
			s.addrs.Set(a, struct{}{})
		} else {
			s.addrs.Delete(a)
		}
	}
}

// rsRead is the outcome of reading the real servers of vss[i].
type rsRead struct {
	i   int
	rss []kernel.RealServer
	err error
}

// realServersToRead lists, in dump order, the dumped virtual servers whose real servers
// this full sync reads (checkRealServers): only those, so a periodic full sync at
// 30,000 Services holds ~500 entries (realServerReads), not one per virtual server.
// Called with s.mu held.
func (s *Syncer) realServersToRead(vss []kernel.DumpedVS) []rsRead {
	var reads []rsRead
	for i, vs := range vss {
		if ours, read := s.checkRealServers(vs.VSKey); ours && read {
			reads = append(reads, rsRead{i: i})
		}
	}
	return reads
}

// readRealServers reads the real servers of the virtual servers listed in reads; called
// with s.mu released.
func (s *Syncer) readRealServers(vss []kernel.DumpedVS, reads []rsRead) {
	for j := range reads {
		reads[j].rss, reads[j].err = s.k.IPVS.ListRealServers(vss[reads[j].i].VSKey)
	}
}

// checkRealServers says what a full sync does with a virtual server found in the
// kernel: nothing if it is not ours; else keep its cached real servers, or (read) read
// them: when it is new to the cache, unwanted, or its turn in the rotation has come.
func (s *Syncer) checkRealServers(key kernel.VSKey) (ours, read bool) {
	_, _, wanted := s.desired.VirtualServer(key)
	p := s.vs.Get(key)
	if !wanted && p == nil && !s.owns(key) {
		return false, false
	}
	return true, p == nil || !wanted || s.checkRealServersNow(key)
}

// backgroundFull is a periodic full sync on its own goroutine (Options.BackgroundFull):
// while it reads the kernel, the Runner's partial syncs go on. What it could not write
// is retried by the next sync, which it asks for with Options.Wake.
//
// It leaves the changes waiting in the tracker to those partial syncs: one it took
// would be programmed only at its end, and each CheckEvery-th full sync lists every set
// (228,004 members at 30,000 Services, 15-18 s in the emulated VM). A change to every
// Service is not lost meanwhile: it waits in the tracker too, and makes the next Sync
// ask for another full sync (fullAgain).
func (s *Syncer) backgroundFull() {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.publish()
	s.background = true
	err := s.run(s.opts.Now(), nil, true) // syncFull clears fullRunning, set when this was started
	s.background = false
	if (err != nil || s.needFull) && s.opts.Wake != nil {
		s.opts.Wake()
	}
}

// readState is what a full sync's unlocked reads need.
type readState struct {
	// touched records what syncs write while a full sync reads; nil otherwise.
	touched *touched
}
