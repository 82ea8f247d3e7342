package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

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

// VSCollector exports the IPVS counters of the virtual servers we own, labelled with
// their Service, as the last full sync read them (at most a syncPeriod and that sync's
// reads old): a dump per scrape was seconds of kernel time at 30,000 Services, and
// scrapes timed out behind the full sync's own reads. Virtual servers of other owners
// are left out. With Limit > 0 only the Limit virtual servers with the most
// connections get their own series; the sums over all of them are exported always.
type VSCollector struct {
	// Stats returns the last full sync's counters (nil before the first) and whether
	// the last full sync's read failed.
	Stats func() (*ipvs.VSStats, bool)
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
		v = &ipvs.VSStats{}
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
