package reconcile

import (
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
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

// unlocked runs read with s.mu released, recording from then on what syncs write
// (until endRead). Called with s.mu held; returns with it held.
func (s *Syncer) unlocked(read func()) {
	s.ipvs.Record()
	s.addrs.Record()
	s.mu.Unlock()
	defer s.mu.Lock()
	read()
}

// endRead stops recording writes and returns the virtual servers written since the read
// began (none if no read did).
func (s *Syncer) endRead() ipvs.Touched {
	s.addrs.EndRecord()
	return s.ipvs.EndRecord()
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
