package main

import (
	"github.com/ipvs-proxier/ipvs-proxier/e2e/loadgen"
)

// bracket joins the two halves of a run's baseline, one measured just before the
// Service load and one just after it: requests and errors add up and req/s is over
// both halves' time, so a VM that speeds up or slows down steadily during the run
// counts the same for the baseline as for the Service load between them. A run that
// measured the whole baseline before, found it noisier than the
// Service path (CV 17 % vs 7 %, r = 0.45). Percentiles do not combine and the
// baseline reports only req/s, so they are left out. A half that failed (no time
// measured) leaves the other.
func bracket(before, after loadgen.Result) loadgen.Result {
	r := loadgen.Result{Mode: before.Mode, Target: before.Target, Workers: before.Workers,
		Seconds: before.Seconds + after.Seconds, Requests: before.Requests + after.Requests, Errors: before.Errors + after.Errors}
	if r.Mode == "" {
		r.Mode, r.Target, r.Workers = after.Mode, after.Target, after.Workers
	}
	if r.Seconds > 0 {
		r.RPS = float64(r.Requests) / r.Seconds
	}
	return r
}
