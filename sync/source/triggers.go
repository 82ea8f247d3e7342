package source

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Trigger is an EndpointSlice change's last-change-trigger-time (the annotation the
// EndpointSlice controller sets), for the network-programming latency metric.
type Trigger struct {
	At   time.Time
	IPv6 bool
}

// sliceTrigger reads a slice's trigger time, if it has one.
func sliceTrigger(sl *discovery.EndpointSlice) (Trigger, bool) {
	v, ok := sl.Annotations[v1.EndpointsLastChangeTriggerTime]
	if !ok {
		return Trigger{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return Trigger{At: t, IPv6: sl.AddressType == discovery.AddressTypeIPv6}, err == nil
}

// triggerBox carries the trigger times of the slices an InformerSource receives to the
// syncer, so that the cached slices need not keep the annotation: a map per cached
// slice, 10 MiB at 30,000 Services (BenchmarkRetainedObjects30k). The informer's
// transform sees a slice before the cache holds it (received); the event handler, after
// (stored), makes its trigger ready for the next sync of its Service, which takes it
// (take). Only times after since are kept: older ones are ages, not latencies (the
// syncer skips them too), so a cold start keeps none.
type triggerBox struct {
	mu      sync.Mutex
	since   time.Time
	pending map[cacheKey]Trigger
	ready   map[proxier.ServiceKey][]Trigger
}

// cacheKey names a slice: namespace and name.
type cacheKey struct{ namespace, name string }

func newTriggerBox(since time.Time) *triggerBox {
	return &triggerBox{since: since, pending: map[cacheKey]Trigger{}, ready: map[proxier.ServiceKey][]Trigger{}}
}

// received notes the trigger time of a slice the informer is about to cache.
func (b *triggerBox) received(sl *discovery.EndpointSlice) {
	t, ok := sliceTrigger(sl)
	if !ok || !t.At.After(b.since) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending[cacheKey{sl.Namespace, sl.Name}] = t
}

// stored makes the trigger time of a slice now in the cache ready for its Service's
// next sync; the handler calls it before telling the Tracker.
func (b *triggerBox) stored(sl *compactSlice) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ck := cacheKey{sl.namespace, sl.name}
	t, ok := b.pending[ck]
	if !ok {
		return
	}
	delete(b.pending, ck)
	if k, ok := sl.key(); ok {
		b.ready[k] = append(b.ready[k], t)
	}
}

// forget drops what is pending for a deleted slice.
func (b *triggerBox) forget(sl *compactSlice) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, cacheKey{sl.namespace, sl.name})
}

// take returns and forgets the trigger times ready for k.
func (b *triggerBox) take(k proxier.ServiceKey) []Trigger {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ready[k]
	delete(b.ready, k)
	return t
}
