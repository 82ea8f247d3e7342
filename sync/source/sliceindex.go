package source

import (
	"sync"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// sliceIndex is the cached EndpointSlices by Service, kept by the slice informer's event
// handler before the Tracker hears of a change, so a sync reads at least what it was
// told of. An informer index would keep, per Service, a set of the slices' keys (a map
// each: 10 MiB at 30,000 Services, BenchmarkRetainedObjects30k); this keeps the
// pointers in a slice, usually of one.
type sliceIndex struct {
	mu sync.RWMutex
	m  map[proxier.ServiceKey][]*compactSlice
}

func newSliceIndex() *sliceIndex {
	return &sliceIndex{m: map[proxier.ServiceKey][]*compactSlice{}}
}

// update replaces old (nil for an add) with cur (nil for a delete); a slice whose
// service-name label changed moves from one Service to the other.
func (x *sliceIndex) update(old, cur *compactSlice) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old != nil {
		x.remove(old)
	}
	if cur != nil {
		x.remove(cur) // an add of a slice already held (a relist) replaces it
		if k, ok := cur.key(); ok {
			x.m[k] = append(x.m[k], cur)
		}
	}
}

// remove drops the slice named like sl from its Service's list.
func (x *sliceIndex) remove(sl *compactSlice) {
	k, ok := sl.key()
	if !ok {
		return
	}
	list := x.m[k]
	for i, o := range list {
		if o.name == sl.name {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(x.m, k)
		return
	}
	x.m[k] = list
}

// get returns k's slices (a copy of the list).
func (x *sliceIndex) get(k proxier.ServiceKey) []*compactSlice {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return append([]*compactSlice(nil), x.m[k]...)
}

// keys returns every Service some slice names.
func (x *sliceIndex) keys() []proxier.ServiceKey {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]proxier.ServiceKey, 0, len(x.m))
	for k := range x.m {
		out = append(out, k)
	}
	return out
}
