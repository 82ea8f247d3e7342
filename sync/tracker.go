package sync

import (
	gosync "sync"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Tracker records which Services changed since the last sync. Informer handlers call it;
// it never touches the kernel. It is safe for concurrent use.
type Tracker struct {
	mu      gosync.Mutex
	changed map[proxier.ServiceKey]struct{}
	all     bool
	notify  func()
}

// NewTracker returns a tracker that calls notify (if not nil) after each change, to wake
// the runner.
func NewTracker(notify func()) *Tracker {
	return &Tracker{changed: map[proxier.ServiceKey]struct{}{}, notify: notify}
}

// ServiceChanged records a change to one Service or its slices.
func (t *Tracker) ServiceChanged(k proxier.ServiceKey) {
	t.mu.Lock()
	t.changed[k] = struct{}{}
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

// Drain returns and clears the recorded changes.
func (t *Tracker) Drain() (keys map[proxier.ServiceKey]struct{}, all bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys, all = t.changed, t.all
	t.changed, t.all = map[proxier.ServiceKey]struct{}{}, false
	return keys, all
}

// Requeue puts keys back, after a sync that could not run (informers not synced yet).
func (t *Tracker) Requeue(keys map[proxier.ServiceKey]struct{}, all bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range keys {
		t.changed[k] = struct{}{}
	}
	t.all = t.all || all
}
