package main

import (
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/loadgen"
)

// sizesOf lists the sizes the rows measured, smallest first.
func sizesOf(rs []result) []int {
	var sizes []int
	for _, r := range rs {
		if !slices.Contains(sizes, r.Services) {
			sizes = append(sizes, r.Services)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// runsOf counts the rows of proxy at n, measured or not.
func runsOf(rs []result, proxy string, n int) int {
	k := 0
	for _, r := range rs {
		if r.Proxy == proxy && r.Services == n {
			k++
		}
	}
	return k
}

// measuredRuns are the rows of proxy at n with a request load.
func measuredRuns(rs []result, proxy string, n int) []result {
	var out []result
	for _, r := range rs {
		if r.Proxy == proxy && r.Services == n && r.Short.RPS > 0 {
			out = append(out, r)
		}
	}
	return out
}

// measured is proxy at n as the ratios compare it: each figure the median of its
// measured runs (the lower middle one of an even count), or nil when none measured.
// The figures are taken apart, so the median row need not be one run's.
func measured(rs []result, proxy string, n int) *result {
	runs := measuredRuns(rs, proxy, n)
	if len(runs) == 0 {
		return nil
	}
	m := result{Services: n, Proxy: proxy, Run: len(runs), Ready: runs[0].Ready,
		Short: loadgen.Result{RPS: median(runs, func(r result) float64 { return r.Short.RPS }),
			Connect: loadgen.Percentiles{
				P50:  median(runs, func(r result) float64 { return r.Short.Connect.P50 }),
				P99:  median(runs, func(r result) float64 { return r.Short.Connect.P99 }),
				P999: median(runs, func(r result) float64 { return r.Short.Connect.P999 })}},
		KeepAlive: loadgen.Result{RPS: median(runs, func(r result) float64 { return r.KeepAlive.RPS })},
		Baseline:  loadgen.Result{RPS: median(runs, func(r result) float64 { return r.Baseline.RPS })}}
	return &m
}

// relative is proxy's short-connection req/s at n through the Service ÷ to the pods
// directly, each run by its own baseline, the median of the runs; 0 where no run
// measured both. Dividing within a run was meant to cancel the host's drift between
// runs; bench/results/dataplane.md says how far it did.
func relative(rs []result, proxy string, n int) float64 {
	var runs []result
	for _, r := range measuredRuns(rs, proxy, n) {
		if r.Baseline.RPS > 0 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return 0
	}
	return median(runs, func(r result) float64 { return r.Short.RPS / r.Baseline.RPS })
}

// median of f over rs, the lower middle one of an even count (as loadgen's
// percentiles, which never invent a value between two samples).
func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// spread is the highest ÷ the lowest of f over the runs: how far one proxy's
// measurements drift within a size.
func spread(rs []result, f func(result) float64) float64 {
	lo, hi := f(rs[0]), f(rs[0])
	for _, r := range rs[1:] {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	return hi / lo
}
