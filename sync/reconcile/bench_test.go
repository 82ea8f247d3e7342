package reconcile

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
)

// BenchmarkEndpointChange30k: one endpoint change with 30,000 Services x 4 endpoints
// already programmed (translation, diff and the fake kernel's work).
func BenchmarkEndpointChange30k(b *testing.B) {
	h := newHarness(b, kernel.Kernel{}, nil)
	addServices(h, 30000)
	h.mustSync(b)
	eps := [][]string{
		{"10.128.0.0", "10.144.0.0", "10.160.0.0", "10.176.0.0"},
		{"10.128.0.0", "10.144.0.0", "10.160.0.0", "10.176.0.0", "10.200.0.1"},
	}
	runtime.GC() // the setup's garbage would otherwise be collected inside the timed loop
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k, _ := h.src.SetSlice(slice("bench", "svc-0", "svc-0-1", 8080, v1.ProtocolTCP, eps[(i+1)%2]...))
		h.tracker.ServiceChanged(k)
		if err := h.syncer.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFullSync: a full reconcile (kernel dump and diff) of N Services x 4, with
// nothing to repair.
func BenchmarkFullSync(b *testing.B) {
	for _, n := range []int{1000, 30000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := newHarness(b, kernel.Kernel{}, nil)
			addServices(h, n)
			h.mustSync(b)
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				h.tracker.AllChanged()
				if err := h.syncer.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRetainedHeap30k reports the live heap the syncer keeps for 30,000 Services x
// 4 endpoints (desired state and the cache of what is programmed): the heap after a sync,
// minus the heap once the syncer is dropped (the source's objects and the fake kernel's
// state stay). In the daemon the informer caches come on top. The DaemonSet's memory
// request is sized from it. IPVS_PROXIER_HEAP_PROFILE=file writes a heap profile.
func BenchmarkRetainedHeap30k(b *testing.B) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for range b.N {
		h := newHarness(b, kernel.Kernel{}, nil)
		addServices(h, 30000)
		source := heap()
		h.mustSync(b)
		withSyncer := heap()
		if p := os.Getenv("IPVS_PROXIER_HEAP_PROFILE"); p != "" { // go tool pprof -sample_index=inuse_space
			if f, err := os.Create(p); err == nil {
				_ = pprof.WriteHeapProfile(f)
				_ = f.Close()
			}
		}
		h.syncer = nil
		without := heap()
		runtime.KeepAlive(h)
		b.ReportMetric(float64(withSyncer-without)/(1<<20), "syncer-MiB")
		b.ReportMetric(float64(source)/(1<<20), "source-MiB")
	}
}

// BenchmarkPeriodicFullSync30k: ten periodic full syncs of 30,000 Services x 4 as the
// daemon runs them (CheckEvery 10: real servers re-read over ten rounds),
// nothing to repair; one op is the ten. allocs/dumped is the allocations per object the
// kernel dumps returned (virtual servers, real servers, addresses, set members): the
// fake's dumps allocate one slice each, so what grows it is the syncer's own garbage
// per dumped object, which a real kernel's larger dumps multiply.
func BenchmarkPeriodicFullSync30k(b *testing.B) {
	// As the daemon runs: the deep checks over ten full syncs, the metrics' default
	// series limit (0 would keep and sort every virtual server's counters each full sync).
	h := newHarness(b, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery, o.VSSeriesLimit = 10, metrics.DefaultVSSeriesLimit })
	addServices(h, 30000)
	h.mustSync(b)
	// As in the daemon, an address watch reports the dummy's addresses unchanged, so
	// the light rounds do not dump them (addrs/watch.go); its first report asks for one
	// dump, done here.
	h.syncer.DummyAddressesChanged(true)
	h.mustSync(b)
	runtime.GC()
	h.fake.ResetOps()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	defer func() {
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if d := h.fake.Dumped(); d > 0 {
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(d), "allocs/dumped")
			b.ReportMetric(float64(d)/float64(10*b.N), "dumped/sync")
		}
	}()
	for range b.N {
		for range 10 {
			h.tracker.AllChanged()
			if err := h.syncer.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(10*b.N), "ns/sync")
}
