package ipvs

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// StatusBusiest is how many of our busiest virtual servers `ipvs-proxier status`
// shows; the snapshot keeps at least that many, whatever the metrics' series limit.
const StatusBusiest = 10

// statsState is our virtual servers' counters as the full syncs read them, for
// /metrics and /status. The cache's programmedVS.stats are the last read of each; the
// totals add up what each read found new; stats is published with every snapshot.
type statsState struct {
	totals Totals
	stats  *VSStats
	// statsRebuild says the next RefreshStats walks every cached virtual server: one
	// came or went, a Service's state changed (an owner may have), or a counter went
	// back (a virtual server re-created behind our back). Otherwise the busiest can only
	// be among those kept and those whose counters grew since (statsMoved), so a light
	// full sync's refresh costs in proportion to its reads: the walk over all 45,000 was
	// a quarter of the daemon's idle CPU at 30,000 Services (the idle CPU profile of
	// `make bench-scale`).
	statsRebuild bool
	statsMoved   []kernel.VSKey
}

// RebuildStats makes the next RefreshStats walk every cached virtual server: a
// Service's state changed, so the owner of one may have.
func (r *Reconciler) RebuildStats() { r.statsRebuild = true }

// readStats records cur as what the virtual server at key (cached as p) counted at this
// read, adding what it counted since the last one to the totals.
func (r *Reconciler) readStats(key kernel.VSKey, p *programmedVS, cur kernel.VSStats) {
	if cur == p.stats {
		return
	}
	if grew(p.stats, cur) {
		r.statsMoved = append(r.statsMoved, key)
	} else {
		r.statsRebuild = true
	}
	r.totals.Add(p.stats, cur)
	p.stats = cur
}

// grew reports whether no counter of cur is below prev's.
func grew(prev, cur kernel.VSStats) bool {
	return cur.Connections >= prev.Connections && cur.PacketsIn >= prev.PacketsIn && cur.PacketsOut >= prev.PacketsOut &&
		cur.BytesIn >= prev.BytesIn && cur.BytesOut >= prev.BytesOut
}

// RefreshStats builds the counters published after a full sync's read: the totals, how
// many virtual servers we own (the cache's), and of those a Service wants the busiest
// Config.VSSeriesLimit (at least StatusBusiest; 0 keeps every one) with their Service.
// Only those are held: the whole dump, an owner map and the previous counters of every
// virtual server were 58 MB of the heap at 100,000 Services (`make bench-scale` heap
// profile).
func (r *Reconciler) RefreshStats() {
	moved := r.statsMoved
	r.statsMoved = r.statsMoved[:0]
	if r.stats != nil && !r.statsRebuild && len(moved) == 0 {
		return // nothing read moved: what is published still holds
	}
	keep := 0
	if r.cfg.VSSeriesLimit > 0 {
		keep = max(r.cfg.VSSeriesLimit, StatusBusiest)
	}
	var b *Busiest
	if r.stats == nil || r.statsRebuild {
		b = NewBusiest(keep, r.vs.Len())
		for key, p := range r.vs.All() {
			r.offerStats(b, key, p.stats)
		}
	} else {
		// The others' counters are as they were when they ranked below those kept.
		b = NewBusiest(keep, len(r.stats.Busiest)+len(moved))
		again := make(map[kernel.VSKey]struct{}, len(moved))
		for _, key := range moved {
			again[key] = struct{}{}
		}
		for _, o := range r.stats.Busiest {
			if _, ok := again[o.Key]; !ok {
				b.Offer(o)
			}
		}
		for key := range again {
			if p := r.vs.Get(key); p != nil {
				r.offerStats(b, key, p.stats)
			}
		}
	}
	r.statsRebuild = false
	r.stats = &VSStats{Totals: r.totals, Busiest: b.Sorted(), Owned: r.vs.Len()}
}

// offerStats offers the virtual server at key to b with its owner, if a Service wants
// it; the owner is looked up only if b would keep it.
func (r *Reconciler) offerStats(b *Busiest, key kernel.VSKey, stats kernel.VSStats) {
	if !b.Wants(key, stats) {
		return
	}
	if _, owner, wanted := r.cfg.Desired().VirtualServer(key); wanted {
		b.Offer(OwnedStats{Key: key, Owner: Owner{Namespace: owner.Namespace, Name: owner.Name}, Stats: stats})
	}
}
