package metrics_test

import (
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics/metricstest"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// vsTraffic is the counters of some virtual servers and our ownership of them, read
// as the syncer reads them at each full sync (the totals over what it owns, the busiest
// of those a Service wants), and scraped. One collector serves every scrape, as the
// daemon keeps one.
type vsTraffic struct {
	stats  map[kernel.VSKey]kernel.VSStats
	owners map[kernel.VSKey]ipvs.Owner
	prev   map[kernel.VSKey]kernel.VSStats
	totals ipvs.Totals
	c      *metrics.VSCollector
}

func newTraffic() *vsTraffic {
	return &vsTraffic{stats: map[kernel.VSKey]kernel.VSStats{}, owners: map[kernel.VSKey]ipvs.Owner{}, c: &metrics.VSCollector{}}
}

// read is a full sync's read: every owned virtual server's counters added to the
// totals, the busiest kept.
func (v *vsTraffic) read(keep int) *ipvs.VSStats {
	b := ipvs.NewBusiest(keep, len(v.stats))
	read := map[kernel.VSKey]kernel.VSStats{}
	for k, s := range v.stats {
		o, ok := v.owners[k]
		if !ok {
			continue
		}
		v.totals.Add(v.prev[k], s)
		read[k] = s
		if b.Wants(k, s) {
			b.Offer(ipvs.OwnedStats{Key: k, Owner: o, Stats: s})
		}
	}
	v.prev = read
	return &ipvs.VSStats{Totals: v.totals, Busiest: b.Sorted(), Owned: len(read)}
}

func vip(s string) kernel.VSKey {
	return kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr(s), Port: 80}
}

func (v *vsTraffic) set(addr, name string, conns uint64) {
	v.stats[vip(addr)] = kernel.VSStats{Connections: conns, PacketsIn: 10 * conns, BytesIn: 100 * conns}
	if name != "" {
		v.owners[vip(addr)] = ipvs.Owner{Namespace: "default", Name: name}
	}
}

// scrape reads (keeping the limit's busiest, as the syncer does) and scrapes.
func (v *vsTraffic) scrape(t *testing.T, limit int) metricstest.Families {
	t.Helper()
	stats := v.read(limit)
	v.c.Limit, v.c.Stats = limit, func() (*ipvs.VSStats, bool) { return stats, false }
	m := metrics.New(metrics.Sources{})
	m.Register(v.c)
	f, err := metricstest.Scrape(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func value(t *testing.T, f metricstest.Families, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := f.Value(name, labels)
	if !ok {
		t.Fatalf("no %s%v", name, labels)
	}
	return v
}

func TestVSSeriesLimitKeepsTheBusiest(t *testing.T) {
	v := newTraffic()
	v.set("10.96.0.1", "quiet", 1)
	v.set("10.96.0.2", "busy", 50)
	v.set("10.96.0.3", "busier", 90)
	v.set("10.96.0.4", "idle", 0)
	v.set("192.0.2.9", "", 1000) // another owner's: neither a series nor in the sums

	f := v.scrape(t, 2)
	if n := len(f["ipvs_connections_total"].GetMetric()); n != 2 {
		t.Fatalf("%d per-VS series with a limit of 2", n)
	}
	for _, name := range []string{"busy", "busier"} {
		value(t, f, "ipvs_connections_total", map[string]string{"name": name})
	}
	if got := value(t, f, "ipvs_proxier_ipvs_stats_series_omitted", nil); got != 2 {
		t.Errorf("omitted = %v, want 2", got)
	}
	if got := value(t, f, "ipvs_proxier_ipvs_connections_total", nil); got != 141 {
		t.Errorf("connections sum = %v, want 141 (ours only, the omitted too)", got)
	}
	if got := value(t, f, "ipvs_proxier_ipvs_incoming_bytes_total", nil); got != 14100 {
		t.Errorf("incoming bytes sum = %v, want 14100", got)
	}

	// 0 exports every owned virtual server.
	if n := len(v.scrape(t, 0)["ipvs_connections_total"].GetMetric()); n != 4 {
		t.Errorf("%d per-VS series with no limit, want 4", n)
	}
	// The syncer keeps more than the limit (for /status): the collector exports the limit's.
	v.c.Stats = func() (*ipvs.VSStats, bool) { return v.read(10), false }
	v.c.Limit = 3
	m := metrics.New(metrics.Sources{})
	m.Register(v.c)
	f, err := metricstest.Scrape(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f["ipvs_connections_total"].GetMetric()); n != 3 {
		t.Errorf("%d per-VS series with a limit of 3 and 4 kept, want 3", n)
	}
	if got := value(t, f, "ipvs_proxier_ipvs_stats_series_omitted", nil); got != 1 {
		t.Errorf("omitted = %v, want 1", got)
	}
}

// Before the first full sync's read there is nothing but zero sums.
func TestVSStatsBeforeTheFirstRead(t *testing.T) {
	m := metrics.New(metrics.Sources{})
	m.Register(&metrics.VSCollector{Stats: func() (*ipvs.VSStats, bool) { return nil, false }})
	f, err := metricstest.Scrape(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	if got := value(t, f, "ipvs_proxier_ipvs_connections_total", nil); got != 0 {
		t.Errorf("connections sum = %v before any read", got)
	}
	if _, ok := f["ipvs_connections_total"]; ok {
		t.Error("per-VS series before any read")
	}
}

// The sums never go back: a deleted virtual server's traffic stays counted, and one
// re-created with smaller counters adds what it counts anew.
func TestVSSumsAreMonotonic(t *testing.T) {
	v := newTraffic()
	v.set("10.96.0.1", "a", 10)
	v.set("10.96.0.2", "b", 20)
	sum := func() float64 { return value(t, v.scrape(t, 1), "ipvs_proxier_ipvs_connections_total", nil) }
	if got := sum(); got != 30 {
		t.Fatalf("sum = %v, want 30", got)
	}
	delete(v.stats, vip("10.96.0.2"))
	delete(v.owners, vip("10.96.0.2"))
	v.set("10.96.0.1", "a", 15)
	if got := sum(); got != 35 {
		t.Errorf("after b's deletion and 5 more on a: sum = %v, want 35", got)
	}
	v.set("10.96.0.1", "a", 3) // re-created behind our back: its counters started over
	if got := sum(); got != 38 {
		t.Errorf("after a's re-creation with 3: sum = %v, want 38", got)
	}
	v.set("10.96.0.2", "b", 25) // b back, re-created: all 25 are new, more than it had when it went
	if got := sum(); got != 63 {
		t.Errorf("after b's return with 25: sum = %v, want 63", got)
	}
}
