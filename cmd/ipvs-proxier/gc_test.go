package main

import (
	"errors"
	"runtime/debug"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/sync/health"
)

// gcPercent returns the current GOGC setting.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestGCHeadroomByStage: the cold start's headroom holds until a sync succeeds, the
// steady one after it, once; a GOGC the operator set is never overridden.
func TestGCHeadroomByStage(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	defer func(f func() uint64) { liveHeap = f }(liveHeap)
	liveHeap = func() uint64 { return 200 << 20 } // as at 30,000 Services or more
	for _, env := range []string{"", "80"} {
		t.Setenv("GOGC", env)
		debug.SetGCPercent(80) // what the runtime read from GOGC=80
		setGCPercent(gcPercentColdStart)
		results := []error{errors.New("apiserver unreachable"), nil, nil}
		var afterFirst int
		sync := syncOnce(func() error { err := results[0]; results = results[1:]; return err },
			health.NewProxy(0, nil), func() { afterFirst++ })
		want := func(stage string, percent int) {
			t.Helper()
			if env != "" {
				percent = 80
			}
			if got := gcPercent(); got != percent {
				t.Errorf("GOGC=%q %s: GC percent %d, want %d", env, stage, got, percent)
			}
		}
		want("at start", gcPercentColdStart)
		_ = sync()
		want("after a failed first sync", gcPercentColdStart)
		_ = sync()
		want("after the first success", gcPercentSteady)
		debug.SetGCPercent(gcPercentColdStart)
		_ = sync()
		if afterFirst != 1 || (env == "" && gcPercent() != gcPercentColdStart) {
			t.Errorf("GOGC=%q: afterFirst ran %d times, GC percent %d after a later sync; want once, untouched", env, afterFirst, gcPercent())
		}
	}
}

// TestSteadyGCPercent: a quarter of a large live heap, at least gcHeadroomFloor of a
// small one, never wider than the cold start's headroom.
func TestSteadyGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, gcPercentColdStart}, // not read: as before
		{7 << 20, gcPercentColdStart},
		{32 << 20, 50},
		{40 << 20, 40},
		{64 << 20, 25},
		{90 << 20, 25},
		{500 << 20, 25},
	} {
		if got := steadyGCPercent(c.live); got != c.want {
			t.Errorf("steadyGCPercent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
	if liveHeap() == 0 {
		t.Error("the runtime reports no live heap")
	}
}
