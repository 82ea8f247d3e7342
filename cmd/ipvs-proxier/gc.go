package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// The Go garbage collector's headroom (GOGC) in two stages. The first sync decodes every
// object and writes every kernel object: a fast-growing heap, where each collection
// marks it all again, so a wider headroom saves cold-start CPU (the collector's mark was
// a sixth of the first minute's CPU at 30,000 Services in the cold-start profile of
// `make bench-scale`) at the price of the peak. After it the allocation rate is low
// (partial syncs, light full syncs, scrapes): a narrower headroom holds the steady RSS
// nearer the live state (the heap grows to (1 + GOGC/100) × live between collections;
// the RSS at 30,000 Services was about twice the live heap at 50) for a few more
// collections. Not below gcHeadroomFloor, though: on a small node the same allocations
// would trigger a collection every few seconds (at 1,000 Services, a 7 MiB live heap,
// GOGC 25 tripled the idle collections of 50 in `make bench-scale`).
const (
	gcPercentColdStart = 50
	gcPercentSteady    = 25
	gcHeadroomFloor    = 16 << 20
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

// steadyGCPercent is the headroom after the first sync for a live heap of live bytes:
// gcPercentSteady, or what gives gcHeadroomFloor bytes, never wider than the cold start's.
func steadyGCPercent(live uint64) int {
	if live == 0 {
		return gcPercentColdStart
	}
	return int(min(max(gcPercentSteady, gcHeadroomFloor*100/live), gcPercentColdStart))
}

// liveHeap returns the live heap as the last collection marked it.
var liveHeap = func() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// afterFirstSync collects the cold start's garbage (every object decoded, the first
// listing of every set: most of the peak heap) and gives it back now rather than over
// the scavenger's next minutes, then narrows the headroom to the live state's.
func afterFirstSync() {
	debug.FreeOSMemory()
	setGCPercent(steadyGCPercent(liveHeap()))
}
