package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Owner names the Service behind a virtual server.
type Owner struct{ Namespace, Name string }

var vsLabels = []string{"namespace", "name", "vip", "port", "protocol"}

// The per-virtual-server counters, read from IPVS at scrape time (one netlink dump).
var (
	vsConnections = prometheus.NewDesc("ipvs_connections_total", "Connections scheduled by the virtual server.", vsLabels, nil)
	vsPacketsIn   = prometheus.NewDesc("ipvs_incoming_packets_total", "Packets from clients to the virtual server.", vsLabels, nil)
	vsPacketsOut  = prometheus.NewDesc("ipvs_outgoing_packets_total", "Packets from the real servers back to clients.", vsLabels, nil)
	vsBytesIn     = prometheus.NewDesc("ipvs_incoming_bytes_total", "Bytes from clients to the virtual server.", vsLabels, nil)
	vsBytesOut    = prometheus.NewDesc("ipvs_outgoing_bytes_total", "Bytes from the real servers back to clients.", vsLabels, nil)
	vsScrapeError = prometheus.NewDesc("ipvs_proxier_ipvs_stats_scrape_error", "1 when the last IPVS stats dump failed.", nil, nil)
)

// VSCollector exports the IPVS counters of the virtual servers we own, labelled with
// their Service. Virtual servers of other owners are left out.
type VSCollector struct {
	Stats  func() (map[kernel.VSKey]kernel.VSStats, error)
	Owners func() map[kernel.VSKey]Owner
}

// Describe implements prometheus.Collector.
func (c VSCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{vsConnections, vsPacketsIn, vsPacketsOut, vsBytesIn, vsBytesOut, vsScrapeError} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c VSCollector) Collect(ch chan<- prometheus.Metric) {
	stats, err := c.Stats()
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(vsScrapeError, prometheus.GaugeValue, failed)
	if err != nil {
		return
	}
	owners := c.Owners()
	for k, s := range stats {
		o, ok := owners[k]
		if !ok {
			continue
		}
		lv := []string{o.Namespace, o.Name, k.Address.String(), strconv.Itoa(int(k.Port)), k.Protocol.String()}
		ch <- prometheus.MustNewConstMetric(vsConnections, prometheus.CounterValue, float64(s.Connections), lv...)
		ch <- prometheus.MustNewConstMetric(vsPacketsIn, prometheus.CounterValue, float64(s.PacketsIn), lv...)
		ch <- prometheus.MustNewConstMetric(vsPacketsOut, prometheus.CounterValue, float64(s.PacketsOut), lv...)
		ch <- prometheus.MustNewConstMetric(vsBytesIn, prometheus.CounterValue, float64(s.BytesIn), lv...)
		ch <- prometheus.MustNewConstMetric(vsBytesOut, prometheus.CounterValue, float64(s.BytesOut), lv...)
	}
}
