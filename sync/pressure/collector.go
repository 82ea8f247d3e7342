package pressure

import "github.com/prometheus/client_golang/prometheus"

// conntrackMetric is one of the conntrack metrics and how it reads a State.
type conntrackMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(State) float64
}

func conntrackDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("ipvs_proxier_conntrack_"+name, help, nil, nil)
}

// conntrackMetrics are the conntrack metrics, each read from the last sample.
var conntrackMetrics = []conntrackMetric{
	{conntrackDesc("entries", "Conntrack table entries."), prometheus.GaugeValue, func(s State) float64 { return float64(s.Entries) }},
	{conntrackDesc("max", "Conntrack table size (nf_conntrack_max)."), prometheus.GaugeValue, func(s State) float64 { return float64(s.Max) }},
	{conntrackDesc("usage_ratio", "Conntrack entries / max."), prometheus.GaugeValue, func(s State) float64 { return s.Usage }},
	{conntrackDesc("pressure", "1 while the conntrack table is under pressure."), prometheus.GaugeValue, func(s State) float64 {
		if s.Pressure {
			return 1
		}
		return 0
	}},
	{conntrackDesc("drop_total", "Packets dropped because a flow could not be tracked (sum over CPUs)."), prometheus.CounterValue,
		func(s State) float64 { return float64(s.Drop) }},
	{conntrackDesc("early_drop_total", "Entries evicted early to make room (sum over CPUs)."), prometheus.CounterValue,
		func(s State) float64 { return float64(s.EarlyDrop) }},
	{conntrackDesc("insert_failed_total", "Failed conntrack insertions (sum over CPUs)."), prometheus.CounterValue,
		func(s State) float64 { return float64(s.InsertFailed) }},
}

// Describe implements prometheus.Collector.
func (m *Monitor) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range conntrackMetrics {
		ch <- c.desc
	}
}

// Collect implements prometheus.Collector with the last sample; a scrape never queries
// the kernel.
func (m *Monitor) Collect(ch chan<- prometheus.Metric) {
	s := m.State()
	if s.Sampled.IsZero() {
		return
	}
	for _, c := range conntrackMetrics {
		ch <- prometheus.MustNewConstMetric(c.desc, c.kind, c.value(s))
	}
}
