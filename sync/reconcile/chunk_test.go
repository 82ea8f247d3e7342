package reconcile

import (
	"fmt"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// TestFullSyncComparesInChunks: a full sync compares and writes the virtual servers a
// chunk at a time and releases the lock between chunks; a partial sync that runs in
// such a gap (a new Service, deleted ones, new endpoints) is programmed at once, and
// the full sync, going on from the state as it then is, undoes none of it. Every
// virtual server has drifted (its scheduler changed by hand), so the full sync has a
// write to make for each, and one decided before the gap but made after it would meet
// a virtual server the partial sync deleted.
func TestFullSyncComparesInChunks(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	addServices(h, 3*ipvs.ApplyChunk) // ~3 chunks of virtual servers
	h.mustSync(t)
	dumped, err := h.fake.ListVirtualServers()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dumped {
		d.Scheduler = "wlc"
		if err := h.fake.UpdateVirtualServer(d.VirtualServer); err != nil {
			t.Fatal(err)
		}
	}
	added := kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.99.0.1"), Port: 80}
	gone := kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.100.0.1"), Port: 80}
	yields, partial := 0, false
	h.syncer.mu.onYield = func() {
		yields++
		if partial {
			return
		}
		partial = true
		changeThree(h)
		for i := 3; i < 3*ipvs.ApplyChunk; i += 6 { // ~500, spread over every chunk
			k := proxier.ServiceKey{Namespace: "bench", Name: fmt.Sprintf("svc-%d", i)}
			h.src.DeleteService(k)
			h.tracker.ServiceChanged(k)
		}
		if err := h.syncer.Sync(); err != nil {
			t.Errorf("partial sync in the gap: %v", err)
		}
		if h.syncer.Status().LastFull || !hasVS(h.fake, added) || hasVS(h.fake, gone) {
			t.Error("the sync in the gap was not a partial sync that programmed the change")
		}
	}
	h.tracker.AllChanged()
	h.mustSync(t) // a full sync, inline
	h.syncer.mu.onYield = nil
	if yields < 2 {
		t.Fatalf("the full sync released the lock %d times, want one per chunk", yields)
	}
	if !hasVS(h.fake, added) || hasVS(h.fake, gone) {
		t.Error("the full sync undid the partial sync's change")
	}
	assertSettled(t, h)
}
