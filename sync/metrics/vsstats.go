package metrics

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Owner names the Service behind a virtual server.
type Owner struct{ Namespace, Name string }

var vsLabels = []string{"namespace", "name", "vip", "port", "protocol"}

// The per-virtual-server counters, as the last full sync's dump read them.
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

// VSCollector exports the IPVS counters of the virtual servers we own, labelled with
// their Service, from the last full sync's dump (at most a syncPeriod and that sync's
// reads old): a dump per scrape was seconds of kernel time at 30,000 Services, and
// scrapes timed out behind the full sync's own reads. Virtual servers of other owners
// are left out. With Limit > 0 only the Limit virtual servers with the most
// connections get their own series; the sums over all of them are exported always,
// kept monotonic across scrapes (a deleted virtual server's traffic stays counted), so
// rate() over them never sees a reset.
type VSCollector struct {
	// Dump returns the last full sync's dump and whether the last full sync's dump failed.
	Dump   func() ([]kernel.DumpedVS, bool)
	Owners func() map[kernel.VSKey]Owner
	// Limit caps the virtual servers with their own series; 0 exports every one.
	Limit int

	mu     sync.Mutex
	last   map[kernel.VSKey]lastStats // the counters at the previous scrape
	scrape uint64                     // counts the scrapes, to drop what one did not see
	totals [5]uint64
}

// lastStats is a virtual server's counters and the scrape that read them.
type lastStats struct {
	stats  kernel.VSStats
	scrape uint64
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

type ownedStats struct {
	key   kernel.VSKey
	owner Owner
	stats kernel.VSStats
}

// Collect implements prometheus.Collector.
func (c *VSCollector) Collect(ch chan<- prometheus.Metric) {
	dump, failed := c.Dump()
	scrapeError := 0.0
	if failed {
		scrapeError = 1
	}
	ch <- prometheus.MustNewConstMetric(vsScrapeError, prometheus.GaugeValue, scrapeError)
	owners := c.Owners()
	owned := make([]ownedStats, 0, len(owners))
	for _, d := range dump {
		if o, ok := owners[d.VSKey]; ok {
			owned = append(owned, ownedStats{d.VSKey, o, d.Stats})
		}
	}
	for i, t := range c.addToTotals(owned) {
		ch <- prometheus.MustNewConstMetric(vsTotals[i], prometheus.CounterValue, float64(t))
	}
	omitted := 0
	if c.Limit > 0 && len(owned) > c.Limit {
		omitted = len(owned) - c.Limit
		owned = busiest(owned, c.Limit)
	}
	ch <- prometheus.MustNewConstMetric(vsOmitted, prometheus.GaugeValue, float64(omitted))
	for _, o := range owned {
		k, s := o.key, o.stats
		lv := []string{o.owner.Namespace, o.owner.Name, k.Address.String(), strconv.Itoa(int(k.Port)), k.Protocol.String()}
		ch <- prometheus.MustNewConstMetric(vsConnections, prometheus.CounterValue, float64(s.Connections), lv...)
		ch <- prometheus.MustNewConstMetric(vsPacketsIn, prometheus.CounterValue, float64(s.PacketsIn), lv...)
		ch <- prometheus.MustNewConstMetric(vsPacketsOut, prometheus.CounterValue, float64(s.PacketsOut), lv...)
		ch <- prometheus.MustNewConstMetric(vsBytesIn, prometheus.CounterValue, float64(s.BytesIn), lv...)
		ch <- prometheus.MustNewConstMetric(vsBytesOut, prometheus.CounterValue, float64(s.BytesOut), lv...)
	}
}

// addToTotals adds what each owned virtual server counted since the previous scrape (a
// new one: all it counted; a counter that went back, as after a re-create: its value) to
// the running sums, and returns them. The previous counters are updated in place, not
// rebuilt: a new map per scrape was 45,000 entries of garbage at 30,000 Services.
func (c *VSCollector) addToTotals(owned []ownedStats) [5]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = make(map[kernel.VSKey]lastStats, len(owned))
	}
	c.scrape++
	for _, o := range owned {
		prev := c.last[o.key].stats
		cur := [5]uint64{o.stats.Connections, o.stats.PacketsIn, o.stats.PacketsOut, o.stats.BytesIn, o.stats.BytesOut}
		was := [5]uint64{prev.Connections, prev.PacketsIn, prev.PacketsOut, prev.BytesIn, prev.BytesOut}
		for i := range cur {
			if cur[i] >= was[i] {
				c.totals[i] += cur[i] - was[i]
			} else {
				c.totals[i] += cur[i]
			}
		}
		c.last[o.key] = lastStats{o.stats, c.scrape}
	}
	for k, l := range c.last {
		if l.scrape != c.scrape {
			delete(c.last, k) // gone, or no longer ours: a return counts anew
		}
	}
	return c.totals
}

// busier orders the busiest first; ties by key, so the set is stable between scrapes.
func busier(a, b ownedStats) int {
	if c := cmp.Compare(b.stats.Connections, a.stats.Connections); c != 0 {
		return c
	}
	return kernel.CompareVSKeys(a.key, b.key)
}

// busiest returns the n busiest of owned (n < len(owned)), busiest first, reordering
// owned. It keeps the n best seen in a heap whose root is the least busy of them, so
// most virtual servers cost one comparison with the root: a sort of all 45,000 at 30,000
// Services was a third of a scrape (BenchmarkVSCollect45k).
func busiest(owned []ownedStats, n int) []ownedStats {
	h := owned[:n]
	// A max-heap under busier: the root is the one busier ranks last.
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= n {
				return
			}
			if r := l + 1; r < n && busier(h[r], h[l]) > 0 {
				l = r
			}
			if busier(h[l], h[i]) <= 0 {
				return
			}
			h[i], h[l] = h[l], h[i]
			i = l
		}
	}
	for i := n/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, o := range owned[n:] {
		if busier(o, h[0]) < 0 {
			h[0] = o
			down(0)
		}
	}
	slices.SortFunc(h, busier)
	return h
}
