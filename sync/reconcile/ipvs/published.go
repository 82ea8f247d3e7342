package ipvs

import (
	"cmp"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// What a full sync publishes of the counters it read: observers (sync/metrics, /status)
// read these values from the syncer's snapshot and never the cache.

// Owner names the Service behind a virtual server.
type Owner struct{ Namespace, Name string }

// OwnedStats is one of our virtual servers, its Service and its counters.
type OwnedStats struct {
	Key   kernel.VSKey
	Owner Owner
	Stats kernel.VSStats
}

// VSStats is what the last full sync read of our virtual servers' counters, built by
// the reconciler as it refreshes its cache of what it programmed and shared read-only
// with every scrape (sync/metrics' VSCollector): the scrape reads no dump, no owner map
// and no counters of its own, which at 100,000 Services were 58 MB of the heap (`make
// bench-scale` heap profile).
type VSStats struct {
	// Totals are the running sums over every virtual server we own (see Totals).
	Totals Totals
	// Busiest are the virtual servers a Service wants, busiest first (see Busiest):
	// every one of them, or at least the series limit's.
	Busiest []OwnedStats
	// Owned counts the virtual servers we own (programmed), Busiest or not.
	Owned int
}

// Totals are the sums of the five counters (connections, packets in and out, bytes in
// and out) over every virtual server we own, kept monotonic: a deleted virtual server's
// traffic stays counted, so rate() over them never sees a reset.
type Totals [5]uint64

// Add adds what a virtual server counted between two reads: prev is what the previous
// read found (zero for one not seen before: all it counted is new), cur what this one
// did. A counter that went back (the virtual server was re-created) adds its value.
func (t *Totals) Add(prev, cur kernel.VSStats) {
	c := [5]uint64{cur.Connections, cur.PacketsIn, cur.PacketsOut, cur.BytesIn, cur.BytesOut}
	p := [5]uint64{prev.Connections, prev.PacketsIn, prev.PacketsOut, prev.BytesIn, prev.BytesOut}
	for i := range c {
		if c[i] >= p[i] {
			t[i] += c[i] - p[i]
		} else {
			t[i] += c[i]
		}
	}
}

// busier orders the busiest first; ties by key, so the set is stable between scrapes.
func busier(a, b OwnedStats) int {
	if c := cmp.Compare(b.Stats.Connections, a.Stats.Connections); c != 0 {
		return c
	}
	return kernel.CompareVSKeys(a.Key, b.Key)
}

// Busiest keeps the n busiest of the virtual servers offered to it: a heap whose root
// is the least busy of those kept, so most offers cost one comparison with the root,
// and only n are ever held (a sort of all 45,000 at 30,000 Services was a third of a
// scrape, sync/metrics' BenchmarkVSCollect45k). The zero n keeps every one.
type Busiest struct {
	n int
	h []OwnedStats
}

// NewBusiest returns an empty Busiest keeping n (0: all, of about expect offers).
func NewBusiest(n, expect int) *Busiest {
	if n > 0 {
		expect = min(n, expect)
	}
	return &Busiest{n: n, h: make([]OwnedStats, 0, expect)}
}

// Wants reports whether a virtual server with these counters would be kept now: the
// caller can skip naming its owner otherwise.
func (b *Busiest) Wants(key kernel.VSKey, s kernel.VSStats) bool {
	return b.n <= 0 || len(b.h) < b.n || busier(OwnedStats{Key: key, Stats: s}, b.h[0]) < 0
}

// Offer keeps o if it is among the n busiest so far.
func (b *Busiest) Offer(o OwnedStats) {
	switch {
	case b.n <= 0 || len(b.h) < b.n-1:
		b.h = append(b.h, o)
	case len(b.h) == b.n-1:
		b.h = append(b.h, o)
		for i := b.n/2 - 1; i >= 0; i-- {
			b.down(i)
		}
	case busier(o, b.h[0]) < 0:
		b.h[0] = o
		b.down(0)
	}
}

// down restores the heap below i: a max-heap under busier, whose root is the one
// busier ranks last.
func (b *Busiest) down(i int) {
	h := b.h
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		if r := l + 1; r < len(h) && busier(h[r], h[l]) > 0 {
			l = r
		}
		if busier(h[l], h[i]) <= 0 {
			return
		}
		h[i], h[l] = h[l], h[i]
		i = l
	}
}

// Sorted returns those kept, busiest first; b is not used after it.
func (b *Busiest) Sorted() []OwnedStats {
	slices.SortFunc(b.h, busier)
	return slices.Clip(b.h)
}
