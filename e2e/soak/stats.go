package main

import (
	"math"

	dto "github.com/prometheus/client_model/go"
)

// histogram is a Prometheus histogram's cumulative bucket counts at a scrape.
type histogram struct {
	Bounds []float64 // upper bounds, ascending, +Inf left out
	Counts []uint64  // cumulative count at each bound
	Total  uint64    // every observation, the +Inf bucket
}

// histogramOf reads a scraped histogram.
func histogramOf(m *dto.Metric) histogram {
	h := m.GetHistogram()
	out := histogram{Total: h.GetSampleCount()}
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.Bounds = append(out.Bounds, b.GetUpperBound())
		out.Counts = append(out.Counts, b.GetCumulativeCount())
	}
	return out
}

// since is what h observed after prev: the difference of the counts, or h itself when
// the process restarted in between (its counts went down).
func (h histogram) since(prev histogram) histogram {
	if prev.Total > h.Total || len(prev.Counts) != len(h.Counts) {
		return h
	}
	d := histogram{Bounds: h.Bounds, Total: h.Total - prev.Total, Counts: make([]uint64, len(h.Counts))}
	for i := range h.Counts {
		if prev.Counts[i] > h.Counts[i] {
			return h
		}
		d.Counts[i] = h.Counts[i] - prev.Counts[i]
	}
	return d
}

// quantile is the q-quantile (0 < q <= 1) as Prometheus's histogram_quantile estimates
// it: linear within the bucket that holds the rank, the last finite bound when the rank
// falls in +Inf; NaN without observations.
func (h histogram) quantile(q float64) float64 {
	if h.Total == 0 {
		return math.NaN()
	}
	rank := q * float64(h.Total)
	lower, below := 0.0, uint64(0)
	for i, c := range h.Counts {
		if float64(c) >= rank {
			if c == below {
				return h.Bounds[i]
			}
			return lower + (h.Bounds[i]-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = h.Bounds[i], c
	}
	if len(h.Bounds) == 0 {
		return math.NaN()
	}
	return h.Bounds[len(h.Bounds)-1]
}

// counterSince is a counter's increase after prev, or cur when it was reset (the
// process restarted).
func counterSince(cur, prev float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// fit is a least-squares line through points: its slope, the slope's standard error,
// and the mean of y. With fewer than three points the error is +Inf (nothing can be
// told from noise).
type fit struct{ Slope, SlopeErr, MeanY float64 }

// fitLine fits y = a + b·x.
func fitLine(xs, ys []float64) fit {
	n := float64(len(xs))
	if len(xs) != len(ys) || len(xs) < 2 {
		return fit{SlopeErr: math.Inf(1)}
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx == 0 {
		return fit{MeanY: my, SlopeErr: math.Inf(1)}
	}
	b := sxy / sxx
	f := fit{Slope: b, MeanY: my, SlopeErr: math.Inf(1)}
	if len(xs) > 2 {
		var rss float64
		for i := range xs {
			r := ys[i] - (my + b*(xs[i]-mx))
			rss += r * r
		}
		f.SlopeErr = math.Sqrt(rss / (n - 2) / sxx)
	}
	return f
}
