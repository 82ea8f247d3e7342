package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// settings are a soak's parameters.
type settings struct {
	Duration            time.Duration
	Services, Endpoints int
	ChurnPerMinute      int
	Seed                uint64
	Sample              time.Duration // between two samples
	DrainScan           time.Duration // between two scans of the IPVS table for weight-0 real servers
	// Faults come from FaultFrom until FaultTo (the rest is the final settling): a round
	// of every kind each FaultEvery, random ones FaultRandomMean apart on average.
	FaultFrom, FaultTo, FaultEvery, FaultRandomMean time.Duration
	// GrowthWindow is the share of the run, at its end, over which growth is fitted.
	GrowthWindow float64
	Out          string
}

// defaults are the settings of a soak of d with n Services: faults from a tenth of the
// run (at most 10 minutes: the warm-up) to a tenth before its end (at most 5 minutes:
// the settling before the final comparison), a round of faults each sixth of that span
// (at most 6 minutes), random ones an eighth of the run apart on average (at least 2
// minutes), the weight-0 scan a twelfth of the run (1 to 5 minutes: a scan of 20,000
// real servers takes seconds of the emulated VM and holds the IPVS lock), and growth
// fitted over the second half.
func defaults(d time.Duration, n int) settings {
	from := min(10*time.Minute, d/10)
	to := d - min(5*time.Minute, d/10)
	return settings{Duration: d, Services: n, Endpoints: 4, ChurnPerMinute: 120, Seed: 1, Sample: time.Minute,
		DrainScan: min(max(d/12, time.Minute), 5*time.Minute), FaultFrom: from, FaultTo: to,
		FaultEvery: min(6*time.Minute, max(time.Minute, (to-from)/time.Duration(len(faultKinds)))), FaultRandomMean: max(2*time.Minute, d/8),
		GrowthWindow: 0.5, Out: filepath.Join(harness.RepoRoot(), "bench/results/soak")}
}

// settingsFromEnv reads SOAK_DURATION [2h], SOAK_SERVICES [5000], SOAK_ENDPOINTS [4],
// SOAK_CHURN [120 changes a minute], SOAK_SEED [1], SOAK_FAULT_EVERY and SOAK_OUT
// [bench/results/soak]; the rest follows from the duration (defaults).
func settingsFromEnv() (settings, error) {
	d, err := time.ParseDuration(benchkit.Env("SOAK_DURATION", "2h"))
	if err != nil || d < 3*time.Minute {
		return settings{}, fmt.Errorf("SOAK_DURATION: want a duration of 3m or more (%v)", err)
	}
	s := defaults(d, benchkit.EnvInt("SOAK_SERVICES", 5000))
	s.Endpoints = benchkit.EnvInt("SOAK_ENDPOINTS", s.Endpoints)
	s.ChurnPerMinute = benchkit.EnvInt("SOAK_CHURN", s.ChurnPerMinute)
	seed, err := strconv.ParseUint(benchkit.Env("SOAK_SEED", "1"), 10, 64)
	if err != nil {
		return settings{}, fmt.Errorf("SOAK_SEED: %w", err)
	}
	s.Seed = seed
	if v := benchkit.Env("SOAK_FAULT_EVERY", ""); v != "" {
		if s.FaultEvery, err = time.ParseDuration(v); err != nil {
			return settings{}, fmt.Errorf("SOAK_FAULT_EVERY: %w", err)
		}
	}
	s.Out = benchkit.Env("SOAK_OUT", s.Out)
	if s.Services < 10 || s.Services > 65536 || s.Endpoints < 1 || s.Endpoints > maxEndpoints {
		return settings{}, fmt.Errorf("SOAK_SERVICES: 10 to 65,536; SOAK_ENDPOINTS: 1 to %d", maxEndpoints)
	}
	return s, nil
}

// plan is the faults' schedule of these settings. The daemon is killed only a warm-up
// before the growth window: a restarted process fills its caches and heap for a minute
// or two, which the window would fit as growth.
func (s settings) plan() faultPlan {
	return faultPlan{From: s.FaultFrom, To: s.FaultTo, Every: s.FaultEvery, RandomMean: s.FaultRandomMean,
		KillBefore: s.windowStart() - s.restartWarmUp()}
}

// windowStart is when the growth window begins, from the soak's start.
func (s settings) windowStart() time.Duration {
	return time.Duration(float64(s.Duration) * (1 - s.GrowthWindow))
}

// restartWarmUp is the time a restarted daemon is given before the growth window: a
// quarter of the run, at most 10 minutes. A restarted process relists every object and
// grows its heap to the live set's level over its first full syncs; the sample CSV's
// process figures after each SIGKILL show how long that takes.
func (s settings) restartWarmUp() time.Duration { return min(10*time.Minute, s.Duration/4) }
