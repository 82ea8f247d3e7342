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
