package metrics

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Owner names the Service behind a virtual server.
type Owner struct{ Namespace, Name string }

var vsLabels = []string{"namespace", "name", "vip", "port", "protocol"}

// The per-virtual-server counters, as the last full sync read them (its dump or lookups).
var (
	vsConnections = prometheus.NewDesc("ipvs_connections_total", "Connections scheduled by the virtual server.", vsLabels, nil)
	vsPacketsIn   = prometheus.NewDesc("ipvs_incoming_packets_total", "Packets from clients to the virtual server.", vsLabels, nil)
	vsPacketsOut  = prometheus.NewDesc("ipvs_outgoing_packets_total", "Packets from the real servers back to clients.", vsLabels, nil)
	vsBytesIn     = prometheus.NewDesc("ipvs_incoming_bytes_total", "Bytes from clients to the virtual server.", vsLabels, nil)
	vsBytesOut    = prometheus.NewDesc("ipvs_outgoing_bytes_total", "Bytes from the real servers back to clients.", vsLabels, nil)
	vsScrapeError = prometheus.NewDesc("ipvs_proxier_ipvs_stats_scrape_error", "1 when the last full sync's IPVS dump failed (the counters are the dump's before).", nil, nil)
	vsOmitted     = prometheus.NewDesc("ipvs_proxier_ipvs_stats_series_omitted",
		"Owned virtual servers left out of the per-virtual-server ipvs_* series by --metrics-per-vs-limit (their traffic is in the ipvs_proxier_ipvs_*_total sums).", nil, nil)
)

// The sums over every owned virtual server, exported whatever the per-VS limit.
var vsTotals = [5]*prometheus.Desc{
	prometheus.NewDesc("ipvs_proxier_ipvs_connections_total", "Connections scheduled by all our virtual servers.", nil, nil),
	prometheus.NewDesc("ipvs_proxier_ipvs_incoming_packets_total", "Packets from clients to all our virtual servers.", nil, nil),
	prometheus.NewDesc("ipvs_proxier_ipvs_outgoing_packets_total", "Packets from the real servers of all our virtual servers back to clients.", nil, nil),
	prometheus.NewDesc("ipvs_proxier_ipvs_incoming_bytes_total", "Bytes from clients to all our virtual servers.", nil, nil),
	prometheus.NewDesc("ipvs_proxier_ipvs_outgoing_bytes_total", "Bytes from the real servers of all our virtual servers back to clients.", nil, nil),
}

// DefaultVSSeriesLimit is how many virtual servers get their own ipvs_* series by
// default: five series each, so 2,500 per scrape, where all of them at 30,000 Services
// (45,000 virtual servers) were 225,000.
const DefaultVSSeriesLimit = 500

// OwnedStats is one of our virtual servers, its Service and its counters.
type OwnedStats struct {
	Key   kernel.VSKey
	Owner Owner
	Stats kernel.VSStats
}

// VSStats is what the last full sync read of our virtual servers' counters, built by
// the syncer as it refreshes its cache of what it programmed and shared read-only
// with every scrape: the scrape reads no dump, no owner map and no counters of its own,
// which at 100,000 Services were 58 MB of the heap (`make bench-scale` heap profile).
type VSStats struct {
	// Totals are the running sums over every virtual server we own (see Totals).
	Totals Totals
	// Busiest are the virtual servers a Service wants, busiest first (see Busiest):
	// every one of them, or at least the series limit's.
	Busiest []OwnedStats
	// Owned counts the virtual servers we own (programmed), Busiest or not.
	Owned int
}

// VSCollector exports the IPVS counters of the virtual servers we own, labelled with
// their Service, as the last full sync read them (at most a syncPeriod and that sync's
// reads old): a dump per scrape was seconds of kernel time at 30,000 Services, and
// scrapes timed out behind the full sync's own reads. Virtual servers of other owners
// are left out. With Limit > 0 only the Limit virtual servers with the most
// connections get their own series; the sums over all of them are exported always.
type VSCollector struct {
	// Stats returns the last full sync's counters (nil before the first) and whether
	// the last full sync's read failed.
	Stats func() (*VSStats, bool)
	// Limit caps the virtual servers with their own series; 0 exports every one.
	Limit int
}

// Describe implements prometheus.Collector.
func (c *VSCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{vsConnections, vsPacketsIn, vsPacketsOut, vsBytesIn, vsBytesOut, vsScrapeError, vsOmitted} {
		ch <- d
	}
	for _, d := range vsTotals {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *VSCollector) Collect(ch chan<- prometheus.Metric) {
	v, failed := c.Stats()
	scrapeError := 0.0
	if failed {
		scrapeError = 1
	}
	ch <- prometheus.MustNewConstMetric(vsScrapeError, prometheus.GaugeValue, scrapeError)
	if v == nil {
		v = &VSStats{}
	}
	for i, t := range v.Totals {
		ch <- prometheus.MustNewConstMetric(vsTotals[i], prometheus.CounterValue, float64(t))
	}
	exported := v.Busiest
	if c.Limit > 0 && len(exported) > c.Limit {
		exported = exported[:c.Limit]
	}
	ch <- prometheus.MustNewConstMetric(vsOmitted, prometheus.GaugeValue, float64(v.Owned-len(exported)))
	for _, o := range exported {
		k, s := o.Key, o.Stats
		lv := []string{o.Owner.Namespace, o.Owner.Name, k.Address.String(), strconv.Itoa(int(k.Port)), k.Protocol.String()}
		ch <- prometheus.MustNewConstMetric(vsConnections, prometheus.CounterValue, float64(s.Connections), lv...)
		ch <- prometheus.MustNewConstMetric(vsPacketsIn, prometheus.CounterValue, float64(s.PacketsIn), lv...)
		ch <- prometheus.MustNewConstMetric(vsPacketsOut, prometheus.CounterValue, float64(s.PacketsOut), lv...)
		ch <- prometheus.MustNewConstMetric(vsBytesIn, prometheus.CounterValue, float64(s.BytesIn), lv...)
		ch <- prometheus.MustNewConstMetric(vsBytesOut, prometheus.CounterValue, float64(s.BytesOut), lv...)
	}
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
// scrape, BenchmarkVSCollect45k). The zero n keeps every one.
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
