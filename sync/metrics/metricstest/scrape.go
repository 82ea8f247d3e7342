// Package metricstest reads a registry back as a Prometheus server would, for tests.
package metricstest

import (
	"bytes"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed scrape, by metric name.
type Families map[string]*dto.MetricFamily

// ParseText parses the Prometheus text format, as a scraper would.
func ParseText(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Scrape renders g in the text format and parses it back, so tests see exactly what a
// Prometheus server would.
func Scrape(g prometheus.Gatherer) (Families, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return ParseText(&buf)
}

// Value returns the value of the sample of name whose labels include want: a gauge's or
// counter's value, or a histogram's count.
func (f Families) Value(name string, want map[string]string) (float64, bool) {
	for _, m := range f[name].GetMetric() {
		if hasLabels(m, want) {
			return sample(m), true
		}
	}
	return 0, false
}

// hasLabels reports whether m carries every label of want with its value.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// sample is m's value: a gauge's, counter's or untyped value, or a histogram's count.
func sample(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}
