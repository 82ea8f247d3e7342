package reconcile

import "sync"

// syncLock is the syncer's lock: syncs serialize on it, and a full sync releases it
// while it reads the kernel, between chunks of its writes, and while it waits for its
// background batches, so that partial syncs go on meanwhile.
type syncLock struct {
	sync.Mutex
	// onYield, for tests, runs in yield with the lock released.
	onYield func()
}

// yield releases the lock and takes it again, so that a partial sync waiting for it goes
// first: Go's mutex hands itself to a goroutine that has waited over a millisecond
// (sync.Mutex, "starvation mode").
func (l *syncLock) yield() {
	l.Unlock()
	if l.onYield != nil {
		l.onYield()
	}
	l.Lock()
}

// waitReleased waits for done, with the lock released if it is not closed yet. Called
// with the lock held; returns with it held.
func (l *syncLock) waitReleased(done <-chan struct{}) {
	select {
	case <-done:
	default:
		l.Unlock()
		<-done
		l.Lock()
	}
}

// lockReleased locks m, a write lock a full sync's background batch holds while it is
// sent (the addresses', the set members'): if the batch holds it, it waits with the lock
// released, so that the full sync goes on meanwhile, after calling onWait (tests; nil:
// none). Called with the lock held; returns with it held.
func (l *syncLock) lockReleased(m *sync.Mutex, onWait func()) {
	if m.TryLock() {
		return
	}
	l.Unlock()
	if onWait != nil {
		onWait()
	}
	m.Lock()
	l.Lock()
}
