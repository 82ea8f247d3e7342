package reconcile

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// TestSnapshotReadersNeverTakeTheSyncLock: /metrics, /status and the health checks read
// the published snapshot. With the syncer's lock held (as a full sync holds it, for
// seconds at 30,000 Services), each reader still answers; one that took the lock would
// never return, and the test fails after 10 s instead of hanging until go test's timeout.
func TestSnapshotReadersNeverTakeTheSyncLock(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	h.src.SetService(svc("ns", "a", "10.96.0.1", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "a", "a-1", 80, v1.ProtocolTCP, "10.1.0.1", "10.1.0.2"))
	h.mustSync(t)
	h.syncer.mu.Lock()
	defer h.syncer.mu.Unlock()
	var (
		st   Status
		c    Counts
		vs   *ipvs.VSStats
		d    int
		done = make(chan struct{})
	)
	go func() {
		st, c, d = h.syncer.Status(), h.syncer.Counts(), h.syncer.Draining()
		vs, _ = h.syncer.VSStats()
		h.syncer.NoLocal(kernel.IPv4)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang guard: a reader that takes the lock never returns
		t.Fatal("a snapshot reader waits on the lock a sync holds")
	}
	if st.Syncs != 1 || c.Services != 1 || c.VirtualServers != 1 || c.RealServers != 2 || vs == nil || d != 0 {
		t.Errorf("snapshot: status %+v counts %+v stats %v draining %d", st, c, vs, d)
	}
}
