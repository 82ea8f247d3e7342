package reconcile

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// refreshCache updates the programmed cache from the virtual-server dump vss, in place,
// not rebuilt: at 30,000 Services a new map and a delta naming every object were most of
// a full sync's garbage. The real servers of a virtual server are re-read when it is new,
// unwanted, or its turn in the CheckEvery rotation has come (checkRealServers): reads
// holds those read before, with s.mu released, in dump order. What a sync wrote during
// the reads (written) keeps its cached state. vss is every virtual server when dumpedAll,
// else those the lookups found (lookedUp, which has the whole dumped if one it looked up
// was missing): the other cached entries are then left as they are: checking each of them
// (checkRealServers) was a third of the time of a full sync that looks up
// (BenchmarkPeriodicFullSync30k).
func (s *Syncer) refreshCache(vss []kernel.DumpedVS, dumpedAll bool, round int, reads []rsRead, written *touched) []error {
	var errs []error
	for i, d := range vss {
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
		p := s.vs.Get(key)
		switch {
		case !ours:
			continue // someone else's: never touched
		case !reread:
			// Known and unchanged at the virtual-server level: keep the cached real
			// servers; this virtual server's turn to be re-read comes within
			// CheckEvery full syncs.
			p.settings, p.seen = settingsOf(vs), int32(round)
			s.readStats(key, p, d.Stats)
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
		p.settings, p.rss, p.seen, p.read = settingsOf(vs), newRealServers(r.rss), int32(round), int32(round)
		s.readStats(key, p, d.Stats)
	}
	for key := range written.vs {
		if p := s.vs.Get(key); p != nil {
			p.seen = int32(round)
		}
	}
	// Pruned only after a dump of all: a light round reads only those it looked up, and a
	// missing one made it dump all.
	if dumpedAll {
		for key, p := range s.vs.All() {
			if p.seen != int32(round) {
				s.dropVS(key) // gone from the kernel (or unreadable)
			}
		}
	}
	// A draining server that vanished from the kernel needs no more draining.
	for dk := range s.drain {
		if p := s.vs.Get(dk.vs); p == nil || !p.hasRS(dk.dest) {
			delete(s.drain, dk)
		}
	}
	return errs
}

// kernelCache is what we programmed, as the last syncs left it.
type kernelCache struct {
	vs kernel.VSMap[*programmedVS]
	// rsTotal is the number of real servers in vs (see setVS).
	rsTotal int
	addrs   kernel.AddrMap[struct{}]
	// dumpFailed is set when the last full sync's read of the virtual servers failed.
	dumpFailed bool
}
