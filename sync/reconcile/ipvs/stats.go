package ipvs

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// StatusBusiest is how many of our busiest virtual servers `ipvs-proxier status`
// shows; the snapshot keeps at least that many, whatever the metrics' series limit.
const StatusBusiest = 10

// counters are our virtual servers' counters as the full syncs read them, for /metrics
// and /status. The cache's programmedVS.stats are the last read of each; the totals add
// up what each read found new; stats is published with every snapshot.
type counters struct {
	totals Totals
	stats  *VSStats
	// rebuild says the next refresh walks every cached virtual server: a Service's state
	// changed (an owner may have), or a counter went back (a virtual server re-created
	// behind our back); so does one that came or went (cache.cameOrWent). Otherwise the
	// busiest can only be among those kept and those whose counters grew since (moved),
	// so a light full sync's refresh costs in proportion to its reads: the walk over all
	// 45,000 was a quarter of the daemon's idle CPU at 30,000 Services (the idle CPU
	// profile of `make bench-scale`).
	rebuild bool
	moved   []kernel.VSKey
}

// Stats are the counters of the last full sync's read; nil before the first.
func (r *Reconciler) Stats() *VSStats { return r.counters.stats }

// RebuildStats makes the next RefreshStats walk every cached virtual server: a
// Service's state changed, so the owner of one may have.
func (r *Reconciler) RebuildStats() { r.counters.rebuild = true }

// RefreshStats builds the counters published after a full sync's read: the totals, how
// many virtual servers we own (the cache's), and of those a Service wants the busiest
// Config.VSSeriesLimit (at least StatusBusiest; 0 keeps every one) with their Service.
// Only those are held: the whole dump, an owner map and the previous counters of every
// virtual server were 58 MB of the heap at 100,000 Services (`make bench-scale` heap
// profile).
func (r *Reconciler) RefreshStats() {
	r.counters.refresh(&r.cache, r.cfg.Desired(), r.cfg.VSSeriesLimit)
}

// read records cur as what the virtual server at key (cached as p) counted at this
// read, adding what it counted since the last one to the totals.
func (c *counters) read(key kernel.VSKey, p *programmedVS, cur kernel.VSStats) {
	if cur == p.stats {
		return
	}
	if grew(p.stats, cur) {
		c.moved = append(c.moved, key)
	} else {
		c.rebuild = true
	}
	c.totals.Add(p.stats, cur)
	p.stats = cur
}

// grew reports whether no counter of cur is below prev's.
func grew(prev, cur kernel.VSStats) bool {
	return cur.Connections >= prev.Connections && cur.PacketsIn >= prev.PacketsIn && cur.PacketsOut >= prev.PacketsOut &&
		cur.BytesIn >= prev.BytesIn && cur.BytesOut >= prev.BytesOut
}

// refresh is RefreshStats over the cache vs, with the owners of desired, keeping the
// limit busiest.
func (c *counters) refresh(vs *cache, desired *proxier.Desired, limit int) {
	moved := c.moved
	c.moved = c.moved[:0]
	if c.stats != nil && !c.rebuild && !vs.cameOrWent && len(moved) == 0 {
		return // nothing read moved: what is published still holds
	}
	keep := 0
	if limit > 0 {
		keep = max(limit, StatusBusiest)
	}
	var b *Busiest
	if c.stats == nil || c.rebuild || vs.cameOrWent {
		b = NewBusiest(keep, vs.Len())
		for key, p := range vs.vs.All() {
			offer(b, key, p.stats, desired)
		}
	} else {
		// The others' counters are as they were when they ranked below those kept.
		b = NewBusiest(keep, len(c.stats.Busiest)+len(moved))
		again := make(map[kernel.VSKey]struct{}, len(moved))
		for _, key := range moved {
			again[key] = struct{}{}
		}
		for _, o := range c.stats.Busiest {
			if _, ok := again[o.Key]; !ok {
				b.Offer(o)
			}
		}
		for key := range again {
			if p := vs.vs.Get(key); p != nil {
				offer(b, key, p.stats, desired)
			}
		}
	}
	c.rebuild, vs.cameOrWent = false, false
	c.stats = &VSStats{Totals: c.totals, Busiest: b.Sorted(), Owned: vs.Len()}
}

// offer offers the virtual server at key to b with its owner in desired, if a Service
// wants it; the owner is looked up only if b would keep it.
func offer(b *Busiest, key kernel.VSKey, stats kernel.VSStats, desired *proxier.Desired) {
	if !b.Wants(key, stats) {
		return
	}
	if _, owner, wanted := desired.VirtualServer(key); wanted {
		b.Offer(OwnedStats{Key: key, Owner: Owner{Namespace: owner.Namespace, Name: owner.Name}, Stats: stats})
	}
}
