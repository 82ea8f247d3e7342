package metrics

import (
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// BenchmarkVSCollect45k: at 30,000 Services (45,000 virtual servers, every one ours),
// what a full sync's read does for the metrics (the totals and the busiest
// DefaultVSSeriesLimit kept, as the writer's ipvs.Reconciler.RefreshStats) and one
// scrape of them.
func BenchmarkVSCollect45k(b *testing.B) {
	const n = 45000
	owned := make([]ipvs.OwnedStats, n)
	for i := range owned {
		k := kernel.VSKey{Protocol: kernel.TCP, Address: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: uint16(80 + i>>16)}
		owned[i] = ipvs.OwnedStats{Key: k, Owner: ipvs.Owner{Namespace: "bench", Name: "svc"}, Stats: kernel.VSStats{Connections: uint64(i % 97)}}
	}
	var stats *ipvs.VSStats
	c := &VSCollector{Stats: func() (*ipvs.VSStats, bool) { return stats, false }, Limit: DefaultVSSeriesLimit}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var totals ipvs.Totals
	b.ReportAllocs()
	for b.Loop() {
		top := ipvs.NewBusiest(DefaultVSSeriesLimit, n)
		for _, o := range owned {
			totals.Add(kernel.VSStats{}, o.Stats)
			if top.Wants(o.Key, o.Stats) {
				top.Offer(o)
			}
		}
		stats = &ipvs.VSStats{Totals: totals, Busiest: top.Sorted(), Owned: n}
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
