package main

import (
	"os"
	"runtime/debug"
)

// The Go garbage collector's headroom (GOGC) in two stages. The first sync decodes every
// object and writes every kernel object: a fast-growing heap, where each collection
// marks it all again, so a wider headroom saves the cold start CPU (the collector's mark
// was a sixth of the first minute's CPU at 30,000 Services in the cold-start profile of
// `make bench-scale`) at the price of the peak. After it the allocation rate is low
// (partial syncs, light full syncs, scrapes): a narrower headroom costs few collections
// and holds the steady RSS nearer the live state (the heap grows to (1 + GOGC/100) ×
// live between collections; RSS at 30,000 Services was about twice the live heap at 50).
const (
	gcPercentColdStart = 50
	gcPercentSteady    = 25
)

// gcTuned reports whether the daemon sets the headroom itself: not when the operator set
// GOGC (GOMEMLIMIT applies either way, beside it).
func gcTuned() bool { return os.Getenv("GOGC") == "" }

// setGCPercent sets the headroom of a stage, unless the operator chose one.
func setGCPercent(percent int) {
	if gcTuned() {
		debug.SetGCPercent(percent)
	}
}
