package reconcile

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
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
		c    metrics.Counts
		own  map[kernel.VSKey]metrics.Owner
		d    int
		done = make(chan struct{})
	)
	go func() {
		st, c, own, d = h.syncer.Status(), h.syncer.Counts(), h.syncer.Owners(), h.syncer.Draining()
		h.syncer.NoLocal(kernel.IPv4)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang guard: a reader that takes the lock never returns
		t.Fatal("a snapshot reader waits on the lock a sync holds")
	}
	if st.Syncs != 1 || c.Services != 1 || c.VirtualServers != 1 || c.RealServers != 2 || len(own) != 1 || d != 0 {
		t.Errorf("snapshot: status %+v counts %+v owners %v draining %d", st, c, own, d)
	}
}

// TestSnapshotOwnersShared: an endpoint change publishes a new snapshot with new counts
// but the same owners map (no copy of every virtual server per sync); a new Service
// gets a new map that names it.
func TestSnapshotOwnersShared(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	a := h.src.SetService(svc("ns", "a", "10.96.0.1", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "a", "a-1", 80, v1.ProtocolTCP, "10.1.0.1"))
	h.mustSync(t)
	first := h.syncer.Snapshot()

	h.src.SetSlice(slice("ns", "a", "a-1", 80, v1.ProtocolTCP, "10.1.0.1", "10.1.0.2"))
	h.tracker.EndpointsChanged(a)
	h.mustSync(t)
	second := h.syncer.Snapshot()
	if second == first || second.Counts.RealServers != 2 || second.Status.Syncs != 2 {
		t.Fatalf("endpoint change: snapshot %+v, want a new one with 2 real servers", second)
	}
	if reflect.ValueOf(second.Owners).UnsafePointer() != reflect.ValueOf(first.Owners).UnsafePointer() {
		t.Error("an endpoint change copied the owners map")
	}

	b := h.src.SetService(svc("ns", "b", "10.96.0.2", 80, v1.ProtocolTCP))
	h.tracker.ServiceChanged(b)
	h.mustSync(t)
	third := h.syncer.Snapshot()
	key := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.2"), Port: 80}
	if o, ok := third.Owners[key]; !ok || o.Name != "b" || len(first.Owners) != 1 {
		t.Errorf("new Service: owners %v (first %v), want b's virtual server in a new map", third.Owners, first.Owners)
	}
	h.src.DeleteService(b)
	h.tracker.ServiceChanged(b)
	h.mustSync(t)
	if _, ok := h.syncer.Owners()[key]; ok {
		t.Error("a deleted Service still owns its virtual server")
	}
}
