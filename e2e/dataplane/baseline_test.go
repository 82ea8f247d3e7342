package main

import (
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/loadgen"
)

// TestBracket: the baseline's two halves join into one req/s over both halves' time, so
// a VM that speeds up during a run moves the baseline as it moves the Service load
// measured between them; a failed half leaves the other.
func TestBracket(t *testing.T) {
	before := loadgen.Result{Mode: "short", Target: "p", Workers: 8, Seconds: 15, Requests: 1500, RPS: 100, Errors: 1}
	after := loadgen.Result{Mode: "short", Target: "p", Workers: 8, Seconds: 15, Requests: 3000, RPS: 200, Errors: 2}
	got := bracket(before, after)
	if got.RPS != 150 || got.Requests != 4500 || got.Seconds != 30 || got.Errors != 3 || got.Mode != "short" {
		t.Errorf("bracket(100 req/s, 200 req/s) = %+v, want 150 req/s over 30 s, 4500 requests, 3 errors", got)
	}
	if got := bracket(loadgen.Result{}, after); got.RPS != 200 || got.Mode != "short" {
		t.Errorf("a failed first half: %+v, want the second's 200 req/s", got)
	}
	if got := bracket(before, loadgen.Result{}); got.RPS != 100 {
		t.Errorf("a failed second half: %+v, want the first's 100 req/s", got)
	}
	if got := bracket(loadgen.Result{}, loadgen.Result{}); got.RPS != 0 {
		t.Errorf("both failed: %+v, want 0 req/s", got)
	}
}
