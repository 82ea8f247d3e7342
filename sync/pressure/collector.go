package pressure

import "github.com/prometheus/client_golang/prometheus"

// The conntrack metrics, from the last sample.
var (
	descEntries      = prometheus.NewDesc("ipvs_proxier_conntrack_entries", "Conntrack table entries.", nil, nil)
	descMax          = prometheus.NewDesc("ipvs_proxier_conntrack_max", "Conntrack table size (nf_conntrack_max).", nil, nil)
	descUsage        = prometheus.NewDesc("ipvs_proxier_conntrack_usage_ratio", "Conntrack entries / max.", nil, nil)
	descPressure     = prometheus.NewDesc("ipvs_proxier_conntrack_pressure", "1 while the conntrack table is under pressure.", nil, nil)
	descDrop         = prometheus.NewDesc("ipvs_proxier_conntrack_drop_total", "Packets dropped because a flow could not be tracked (sum over CPUs).", nil, nil)
	descEarlyDrop    = prometheus.NewDesc("ipvs_proxier_conntrack_early_drop_total", "Entries evicted early to make room (sum over CPUs).", nil, nil)
	descInsertFailed = prometheus.NewDesc("ipvs_proxier_conntrack_insert_failed_total", "Failed conntrack insertions (sum over CPUs).", nil, nil)
)

// Describe implements prometheus.Collector.
func (m *Monitor) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEntries, descMax, descUsage, descPressure, descDrop, descEarlyDrop, descInsertFailed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector with the last sample; a scrape never queries
// the kernel.
func (m *Monitor) Collect(ch chan<- prometheus.Metric) {
	s := m.State()
	if s.Sampled.IsZero() {
		return
	}
	p := 0.0
	if s.Pressure {
		p = 1
	}
	for _, v := range []struct {
		d *prometheus.Desc
		t prometheus.ValueType
		v float64
	}{
		{descEntries, prometheus.GaugeValue, float64(s.Entries)},
		{descMax, prometheus.GaugeValue, float64(s.Max)},
		{descUsage, prometheus.GaugeValue, s.Usage},
		{descPressure, prometheus.GaugeValue, p},
		{descDrop, prometheus.CounterValue, float64(s.Drop)},
		{descEarlyDrop, prometheus.CounterValue, float64(s.EarlyDrop)},
		{descInsertFailed, prometheus.CounterValue, float64(s.InsertFailed)},
	} {
		ch <- prometheus.MustNewConstMetric(v.d, v.t, v.v)
	}
}
