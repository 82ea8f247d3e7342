package source

import (
	"sync"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Tracker records which Services changed since the last sync. Informer handlers call it;
// it never touches the kernel. It is safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	changed map[proxier.ServiceKey]changeKind
	all     bool
	notify  func()
	// serviceEvents and endpointEvents count events, for the *_changes_total metrics.
	serviceEvents, endpointEvents uint64
}

// changeKind records what changed about a Service: the object, its slices, or both.
type changeKind uint8

const (
	serviceChange changeKind = 1 << iota
	endpointsChange
)

// NewTracker returns a tracker that calls notify (if not nil) after each change, to wake
// the runner.
func NewTracker(notify func()) *Tracker {
	return &Tracker{changed: map[proxier.ServiceKey]changeKind{}, notify: notify}
}

// ServiceChanged records a change to one Service object.
func (t *Tracker) ServiceChanged(k proxier.ServiceKey) { t.record(k, serviceChange) }

// EndpointsChanged records a change to one of a Service's EndpointSlices.
func (t *Tracker) EndpointsChanged(k proxier.ServiceKey) { t.record(k, endpointsChange) }

func (t *Tracker) record(k proxier.ServiceKey, kind changeKind) {
	t.mu.Lock()
	t.changed[k] |= kind
	if kind == serviceChange {
		t.serviceEvents++
	} else {
		t.endpointEvents++
	}
	t.mu.Unlock()
	if t.notify != nil {
		t.notify()
	}
}

// AllChanged records a change that affects every Service (the Node's zone or addresses).
func (t *Tracker) AllChanged() {
	t.mu.Lock()
	t.all = true
	t.mu.Unlock()
	if t.notify != nil {
		t.notify()
	}
}

// Pending returns how many Services wait to be synced.
func (t *Tracker) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.changed)
}

// PendingByKind returns how many Services wait with a changed object, and how many with
// changed slices (a Service may count in both).
func (t *Tracker) PendingByKind() (services, endpoints int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, kind := range t.changed {
		if kind&serviceChange != 0 {
			services++
		}
		if kind&endpointsChange != 0 {
			endpoints++
		}
	}
	return services, endpoints
}

// Totals returns the Service and EndpointSlice events recorded so far.
func (t *Tracker) Totals() (services, endpoints uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.serviceEvents, t.endpointEvents
}

// Drain returns and clears the recorded changes.
func (t *Tracker) Drain() (keys map[proxier.ServiceKey]struct{}, all bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys = make(map[proxier.ServiceKey]struct{}, len(t.changed))
	for k := range t.changed {
		keys[k] = struct{}{}
	}
	all = t.all
	t.changed, t.all = map[proxier.ServiceKey]changeKind{}, false
	return keys, all
}
