package ipvs

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// RefreshCache updates the programmed cache from full sync round's virtual-server dump vss, in place,
// not rebuilt: at 30,000 Services a new map and a delta naming every object were most of
// a full sync's garbage. The real servers of a virtual server are re-read when it is new,
// unwanted, or its turn in the CheckEvery rotation has come (checkRealServers): reads
// holds those read before, with the syncer's lock released, in dump order. What a sync wrote during
// the reads (written) keeps its cached state. vss is every virtual server when dumpedAll,
// else those the lookups found (LookedUp, which has the whole dumped if one it looked up
// was missing): the other cached entries are then left as they are: checking each of them
// (checkRealServers) was a third of the time of a full sync that looks up
// (BenchmarkPeriodicFullSync30k).
func (r *Reconciler) RefreshCache(vss []kernel.DumpedVS, dumpedAll bool, round int, reads []RSRead, written Touched) []error {
	var errs []error
	for i, d := range vss {
		var rd RSRead
		if len(reads) > 0 && reads[0].i == i {
			rd, reads = reads[0], reads[1:]
		} else {
			rd.i = -1 // not read before
		}
		key, settings := d.VSKey, d.VSSettings.Own()
		if written.Has(key) {
			continue // the dump is older than the cache here
		}
		ours, reread := r.checkRealServers(key, round)
		p := r.vs.Get(key)
		switch {
		case !ours:
			continue // someone else's: never touched
		case !reread:
			// Known and unchanged at the virtual-server level: keep the cached real
			// servers; this virtual server's turn to be re-read comes within
			// CheckEvery full syncs.
			p.settings, p.seen = settings, int32(round)
			r.counters.read(key, p, d.Stats)
			continue
		}
		if rd.i < 0 { // its state moved between the list of reads and now
			rd.rss, rd.err = r.cfg.IPVS.ListRealServers(key)
		}
		if rd.err != nil {
			errs = append(errs, rd.err)
			if _, _, wanted := r.cfg.Desired().VirtualServer(key); wanted {
				r.dropVS(key) // left out of the cache: re-added, which adopts and corrects it
				continue
			}
		}
		if p == nil {
			p = &programmedVS{}
			r.setVS(key, p)
		}
		r.rsTotal += len(rd.rss) - len(p.rss)
		p.settings, p.rss, p.seen, p.read = settings, newRealServers(rd.rss), int32(round), int32(round)
		r.counters.read(key, p, d.Stats)
	}
	for key := range written {
		if p := r.vs.Get(key); p != nil {
			p.seen = int32(round)
		}
	}
	// Pruned only after a dump of all: a light round reads only those it looked up, and a
	// missing one made it dump all.
	if dumpedAll {
		for key, p := range r.vs.All() {
			if p.seen != int32(round) {
				r.dropVS(key) // gone from the kernel (or unreadable)
			}
		}
	}
	// A draining server that vanished from the kernel needs no more draining.
	for dk := range r.drain {
		if p := r.vs.Get(dk.vs); p == nil || !p.hasRS(dk.dest) {
			delete(r.drain, dk)
		}
	}
	return errs
}
