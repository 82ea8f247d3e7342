package reconcile

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestFullSyncDueFromTheLastFullSync: the periodic full sync is due SyncPeriod after the
// last one began, however many partial syncs came since. The Runner restarts its timer
// after every run, so a partial sync 29 s after a full one used to put the next full
// sync at 59 s (a CI run's per-VS counters waited past their 45 s bound for it).
func TestFullSyncDueFromTheLastFullSync(t *testing.T) {
	for _, background := range []bool{false, true} {
		var clock atomic.Int64
		t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
		clock.Store(t0.UnixNano())
		h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
			o.BackgroundFull = background
			o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
		})
		if got := h.syncer.FullDueIn(); got > 0 {
			t.Errorf("background %v: before the first sync the full sync is due in %v, want now", background, got)
		}
		addServices(h, 3)
		h.mustSync(t) // the first full sync, inline
		clock.Add(int64(29 * time.Second))
		changeThree(h)
		h.mustSync(t)
		if h.syncer.Status().LastFull {
			t.Fatalf("background %v: the sync 29 s after the full one was full", background)
		}
		if got := h.syncer.FullDueIn(); got != time.Second {
			t.Errorf("background %v: after a partial sync at 29 s the full sync is due in %v, want 1s", background, got)
		}
		clock.Add(int64(time.Second))
		h.mustSync(t) // due: full (in the background, started)
		waitIdle(t, h)
		if !h.syncer.Status().LastFull {
			t.Errorf("background %v: the sync at 30 s was not full", background)
		}
		if got := h.syncer.FullDueIn(); got != 30*time.Second {
			t.Errorf("background %v: after the full sync at 30 s the next is due in %v, want 30s", background, got)
		}
	}
}

// waitIdle waits for a background full sync to end.
func waitIdle(t *testing.T, h *harness) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.syncer.mu.Lock()
		running := h.syncer.fullRunning
		h.syncer.mu.Unlock()
		if !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the background full sync did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
