package metrics

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// BenchmarkVSCollect45k: one scrape of the per-virtual-server collector at 30,000
// Services (45,000 virtual servers, every one ours), as Prometheus scrapes it every
// interval: the sums over all of them and the series of the busiest DefaultVSSeriesLimit.
func BenchmarkVSCollect45k(b *testing.B) {
	const n = 45000
	dump := make([]kernel.DumpedVS, n)
	owners := make(map[kernel.VSKey]Owner, n)
	for i := range dump {
		k := kernel.VSKey{Protocol: kernel.TCP, Address: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: uint16(80 + i>>16)}
		dump[i] = kernel.DumpedVS{VirtualServer: kernel.VirtualServer{VSKey: k}, Stats: kernel.VSStats{Connections: uint64(i % 97)}}
		owners[k] = Owner{Namespace: "bench", Name: "svc"}
	}
	c := &VSCollector{Dump: func() ([]kernel.DumpedVS, bool) { return dump, false }, Owners: func() map[kernel.VSKey]Owner { return owners }, Limit: DefaultVSSeriesLimit}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBusiestIsTheSortsHead: the heap selection returns what a sort of every virtual
// server would put first, in its order, ties included.
func TestBusiestIsTheSortsHead(t *testing.T) {
	var owned []ownedStats
	for i := range 2000 {
		k := kernel.VSKey{Protocol: kernel.TCP, Address: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: 80}
		owned = append(owned, ownedStats{key: k, stats: kernel.VSStats{Connections: uint64((i * 7919) % 31)}})
	}
	for _, n := range []int{1, 2, 37, 500, 1999} {
		want := slices.Clone(owned)
		slices.SortFunc(want, busier)
		got := busiest(slices.Clone(owned), n)
		if !slices.Equal(got, want[:n]) {
			t.Errorf("n=%d: the selection differs from the sort's first %d", n, n)
		}
	}
}
