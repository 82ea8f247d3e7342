package reconcile

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
)

// StatusBusiest is how many of our busiest virtual servers `ipvs-proxier status`
// shows; the snapshot keeps at least that many, whatever the metrics' series limit.
const StatusBusiest = 10

// statsState is our virtual servers' counters as the full syncs read them, for
// /metrics and /status. The cache's programmedVS.stats are the last read of each; the
// totals add up what each read found new; stats is published with every snapshot.
type statsState struct {
	totals metrics.Totals
	stats  *metrics.VSStats
	// statsFresh says stats still tells what refreshStats would build: no counter read
	// moved, no virtual server came or went from the cache, no Service's state changed
	// (an owner may have) since it was built. A full sync on an idle node then skips the
	// walk over every cached virtual server, which was a quarter of the daemon's idle CPU
	// at 30,000 Services (the idle CPU profile of `make bench-scale`).
	statsFresh bool
}

// readStats records cur as what p's virtual server counted at this read, adding what it
// counted since the last one to the totals.
func (s *Syncer) readStats(p *programmedVS, cur kernel.VSStats) {
	if cur == p.stats {
		return
	}
	s.statsFresh = false
	s.totals.Add(p.stats, cur)
	p.stats = cur
}

// refreshStats builds the counters published after a full sync's read: the totals, how
// many virtual servers we own (the cache's), and of those a Service wants the busiest
// Options.VSSeriesLimit (at least StatusBusiest; 0 keeps every one) with their Service.
// Only those are held: the whole dump, an owner map and the previous counters of every
// virtual server were 58 MB of the heap at 100,000 Services (`make bench-scale` heap
// profile).
func (s *Syncer) refreshStats() {
	if s.statsFresh {
		return
	}
	s.statsFresh = true
	keep := 0
	if s.opts.VSSeriesLimit > 0 {
		keep = max(s.opts.VSSeriesLimit, StatusBusiest)
	}
	b := metrics.NewBusiest(keep, s.vs.Len())
	for key, p := range s.vs.All() {
		if !b.Wants(key, p.stats) {
			continue // most of them, past the first keep: no owner looked up
		}
		if _, owner, wanted := s.desired.VirtualServer(key); wanted {
			b.Offer(metrics.OwnedStats{Key: key, Owner: metrics.Owner{Namespace: owner.Namespace, Name: owner.Name}, Stats: p.stats})
		}
	}
	s.stats = &metrics.VSStats{Totals: s.totals, Busiest: b.Sorted(), Owned: s.vs.Len()}
}
