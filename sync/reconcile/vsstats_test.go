package reconcile

import (
	"net/netip"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// TestVSTotalsAreMonotonic: the published sums never go back. A deleted virtual server's
// traffic stays counted; one re-created behind our back, whose counters started over,
// adds what it counts anew; a Service's return counts all its new virtual server does.
// The busiest list names each virtual server's Service.
func TestVSTotalsAreMonotonic(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	h.src.SetService(svc("ns", "a", "10.96.0.1", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "a", "a-1", 80, v1.ProtocolTCP, "10.1.0.1"))
	bSvc := svc("ns", "b", "10.96.0.2", 80, v1.ProtocolTCP)
	b := h.src.SetService(bSvc)
	h.src.SetSlice(slice("ns", "b", "b-1", 80, v1.ProtocolTCP, "10.1.0.2"))
	h.mustSync(t)
	ka := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 80}
	kb := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.2"), Port: 80}
	conns := func(n uint64) kernel.VSStats { return kernel.VSStats{Connections: n, BytesIn: 100 * n} }
	sum := func() (uint64, *ipvs.VSStats) {
		t.Helper()
		fullSyncOps(t, h)
		stats, failed := h.syncer.VSStats()
		if stats == nil || failed {
			t.Fatalf("no counters published after a full sync (failed %v)", failed)
		}
		if stats.Totals[3] != 100*stats.Totals[0] {
			t.Errorf("bytes in %d, want 100 x the %d connections", stats.Totals[3], stats.Totals[0])
		}
		return stats.Totals[0], stats
	}

	h.fake.AddTraffic(ka, conns(10))
	h.fake.AddTraffic(kb, conns(20))
	if got, stats := sum(); got != 30 || stats.Owned != 2 || len(stats.Busiest) != 2 ||
		stats.Busiest[0].Key != kb || stats.Busiest[0].Owner != (ipvs.Owner{Namespace: "ns", Name: "b"}) {
		t.Fatalf("sum %d, stats %+v: want 30, b the busiest of 2", got, stats)
	}

	h.src.DeleteService(b)
	h.tracker.ServiceChanged(b)
	h.mustSync(t)
	h.fake.AddTraffic(ka, conns(5))
	if got, stats := sum(); got != 35 || stats.Owned != 1 {
		t.Errorf("after b's deletion and 5 more on a: sum %d owned %d, want 35 and 1", got, stats.Owned)
	}

	// Re-created behind our back between two reads: its counters started over.
	vs, _, _ := h.syncer.desired.VirtualServer(ka)
	must(t, h.fake.DeleteVirtualServer(ka))
	must(t, h.fake.AddVirtualServer(vs.VirtualServer))
	h.fake.AddTraffic(ka, conns(3))
	if got, _ := sum(); got != 38 {
		t.Errorf("after a's re-creation with 3: sum %d, want 38", got)
	}

	h.src.SetService(bSvc)
	h.tracker.ServiceChanged(b)
	h.mustSync(t)
	h.fake.AddTraffic(kb, conns(25)) // more than b had when it went: all 25 are new
	if got, stats := sum(); got != 63 || stats.Owned != 2 {
		t.Errorf("after b's return with 25: sum %d owned %d, want 63 and 2", got, stats.Owned)
	}
}

// TestVSStatsKeepTheBusiest: with a series limit the snapshot keeps the busiest
// (StatusBusiest at least), not every virtual server, and counts them all as owned.
func TestVSStatsKeepTheBusiest(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.VSSeriesLimit = 3 })
	addServices(h, 40)
	h.mustSync(t)
	dumped, err := h.fake.ListVirtualServers()
	must(t, err)
	for i, d := range dumped {
		h.fake.AddTraffic(d.VSKey, kernel.VSStats{Connections: uint64(i)})
	}
	fullSyncOps(t, h)
	stats, _ := h.syncer.VSStats()
	if stats.Owned != 40 || len(stats.Busiest) != StatusBusiest || stats.Busiest[0].Stats.Connections != 39 ||
		stats.Busiest[StatusBusiest-1].Stats.Connections != 30 {
		t.Errorf("owned %d, kept %d (%+v): want 40 owned, the %d busiest kept, busiest first", stats.Owned, len(stats.Busiest), stats.Busiest, StatusBusiest)
	}
}

// TestVSStatsRebuiltOnlyWhenStale: a full sync that read no moved counter, changed no
// cached virtual server and no Service keeps the published counters as they are (an
// idle node's full syncs skip the walk over every virtual server); a counter that moved,
// a virtual server gone, or a new owner (a conflict's loser taking over) rebuilds them.
func TestVSStatsRebuiltOnlyWhenStale(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	h.src.SetService(svc("ns", "a", "10.96.0.1", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "a", "a-1", 80, v1.ProtocolTCP, "10.1.0.1"))
	h.src.SetService(svc("ns", "c", "10.96.0.1", 80, v1.ProtocolTCP)) // a's rival: a wins
	h.src.SetSlice(slice("ns", "c", "c-1", 80, v1.ProtocolTCP, "10.1.0.3"))
	bSvc := h.src.SetService(svc("ns", "b", "10.96.0.2", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "b", "b-1", 80, v1.ProtocolTCP, "10.1.0.2"))
	h.mustSync(t)
	ka := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 80}
	read := func() *ipvs.VSStats {
		t.Helper()
		fullSyncOps(t, h)
		stats, _ := h.syncer.VSStats()
		return stats
	}
	h.fake.AddTraffic(ka, kernel.VSStats{Connections: 7})
	first := read()
	if first.Owned != 2 || first.Busiest[0].Owner.Name != "a" {
		t.Fatalf("first read %+v: want 2 owned, a's the busiest", first)
	}
	if again := read(); again != first {
		t.Errorf("nothing moved, yet the counters were rebuilt: %+v after %+v", again, first)
	}

	h.fake.AddTraffic(ka, kernel.VSStats{Connections: 1})
	if moved := read(); moved == first || moved.Totals[0] != 8 {
		t.Errorf("a counter moved: totals %v, rebuilt %v; want 8 connections, rebuilt", moved.Totals, moved != first)
	}

	h.src.DeleteService(bSvc)
	h.tracker.ServiceChanged(bSvc)
	h.mustSync(t)
	if gone := read(); gone.Owned != 1 {
		t.Errorf("b's virtual server is gone: owned %d, want 1", gone.Owned)
	}

	aKey := proxier.ServiceKey{Namespace: "ns", Name: "a"}
	h.src.DeleteService(aKey)
	h.tracker.ServiceChanged(aKey)
	h.mustSync(t)
	if owner := read().Busiest[0].Owner.Name; owner != "c" {
		t.Errorf("a went and c took its virtual server over, yet the busiest names %q", owner)
	}
}

// TestVSStatsUpdateIsTheWalk: with counters growing on a few virtual servers at a time,
// the busiest list the light refresh builds (those kept and those that moved) is the one
// a walk over every virtual server builds.
func TestVSStatsUpdateIsTheWalk(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.VSSeriesLimit = 3 })
	addServices(h, 40)
	h.mustSync(t)
	dumped, err := h.fake.ListVirtualServers()
	must(t, err)
	for round := range 12 {
		for i, d := range dumped {
			if (i*7+round)%5 == 0 && round != 11 { // a different few each round; none after the re-creation
				h.fake.AddTraffic(d.VSKey, kernel.VSStats{Connections: uint64(i%9 + round), BytesIn: 1})
			}
		}
		fullSyncOps(t, h)
		light, _ := h.syncer.VSStats()
		h.syncer.ipvs.RebuildStats()
		h.syncer.ipvs.RefreshStats()
		walked := h.syncer.ipvs.Stats()
		if !slices.Equal(light.Busiest, walked.Busiest) || light.Totals != walked.Totals || light.Owned != walked.Owned {
			t.Fatalf("round %d: the light refresh kept %+v, the walk %+v", round, light.Busiest, walked.Busiest)
		}
		if round == 10 { // the busiest re-created behind our back: its counters start over
			top, _ := h.syncer.VSStats()
			vs, _, _ := h.syncer.desired.VirtualServer(top.Busiest[0].Key)
			must(t, h.fake.DeleteVirtualServer(vs.VSKey))
			must(t, h.fake.AddVirtualServer(vs.VirtualServer))
		}
	}
}
