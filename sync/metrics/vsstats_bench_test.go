package metrics

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// BenchmarkVSCollect45k: at 30,000 Services (45,000 virtual servers, every one ours),
// what a full sync's read does for the metrics (the totals and the busiest
// DefaultVSSeriesLimit kept, as the writer's ipvs.Reconciler.RefreshStats) and one scrape of them.
func BenchmarkVSCollect45k(b *testing.B) {
	const n = 45000
	owned := make([]OwnedStats, n)
	for i := range owned {
		k := kernel.VSKey{Protocol: kernel.TCP, Address: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: uint16(80 + i>>16)}
		owned[i] = OwnedStats{Key: k, Owner: Owner{Namespace: "bench", Name: "svc"}, Stats: kernel.VSStats{Connections: uint64(i % 97)}}
	}
	var stats *VSStats
	c := &VSCollector{Stats: func() (*VSStats, bool) { return stats, false }, Limit: DefaultVSSeriesLimit}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var totals Totals
	b.ReportAllocs()
	for b.Loop() {
		top := NewBusiest(DefaultVSSeriesLimit, n)
		for _, o := range owned {
			totals.Add(kernel.VSStats{}, o.Stats)
			if top.Wants(o.Key, o.Stats) {
				top.Offer(o)
			}
		}
		stats = &VSStats{Totals: totals, Busiest: top.Sorted(), Owned: n}
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBusiestIsTheSortsHead: the heap selection keeps what a sort of every virtual
// server would put first, in its order, ties included; n = 0 keeps all.
func TestBusiestIsTheSortsHead(t *testing.T) {
	var owned []OwnedStats
	for i := range 2000 {
		k := kernel.VSKey{Protocol: kernel.TCP, Address: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: 80}
		owned = append(owned, OwnedStats{Key: k, Stats: kernel.VSStats{Connections: uint64((i * 7919) % 31)}})
	}
	want := slices.Clone(owned)
	slices.SortFunc(want, busier)
	for _, n := range []int{1, 2, 37, 500, 1999, 2000, 2500, 0} {
		b := NewBusiest(n, len(owned))
		for _, o := range owned {
			b.Offer(o)
		}
		keep := len(owned)
		if n > 0 {
			keep = min(n, keep)
		}
		if got := b.Sorted(); !slices.Equal(got, want[:keep]) {
			t.Errorf("n=%d: the selection differs from the sort's first %d", n, keep)
		}
	}
}
