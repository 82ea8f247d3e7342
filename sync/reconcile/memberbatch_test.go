package reconcile

import (
	"sync"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/sets"
)

// lowerBackgroundMembers makes a full sync send its member writes in the background from
// n of them on, for one test.
func lowerBackgroundMembers(t *testing.T, n int) {
	old := sets.BackgroundMembers
	sets.BackgroundMembers = n
	t.Cleanup(func() { sets.BackgroundMembers = old })
}

// TestMembersWrittenAlongsideVirtualServers: a cold start's set members (many) are
// written while the virtual servers are. The kernel lets the first member write
// proceed only once every virtual server is written, and the virtual-server writes only
// once the member writes began: a sync that writes the members before (or after) the
// virtual servers fails one of them.
func TestMembersWrittenAlongsideVirtualServers(t *testing.T) {
	const n = 200
	lowerBackgroundMembers(t, 100)
	entriesBegan, vssWritten := make(chan struct{}), make(chan struct{})
	var once sync.Once
	waitOrFail := gate()
	fake := kernel.NewFake()
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Before: func(op string) error {
		switch op {
		case "AddEntry":
			once.Do(func() { close(entriesBegan) })
			return waitOrFail(vssWritten, "the virtual servers")
		case "AddVirtualServer":
			return waitOrFail(entriesBegan, "the member writes to begin")
		}
		return nil
	}})
	h := newHarness(t, k, fake)
	addServices(h, n)
	done := make(chan error, 1)
	go func() { done <- h.syncer.Sync() }()
	deadline := time.Now().Add(gateTimeout)
	for {
		if vss, _ := fake.ListVirtualServers(); len(vss) == n || time.Now().After(deadline) {
			close(vssWritten)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got, _ := fake.ListEntries("KUBE-CLUSTER-IP"); len(got) != n {
		t.Errorf("KUBE-CLUSTER-IP holds %d, want %d", len(got), n)
	}
	assertSettled(t, h)
}

// TestPartialSyncMembersAfterTheBatch: a partial sync that deletes a set member while a
// full sync's member batch (which adds it, decided before) is in flight waits for the
// batch, so the delete lands last and the member ends absent.
func TestPartialSyncMembersAfterTheBatch(t *testing.T) {
	const n = 200
	lowerBackgroundMembers(t, 100)
	release, addBegan, partialDeletes := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var gated bool
	var mu sync.Mutex
	var once, delOnce sync.Once
	waitOrFail := gate()
	fake := kernel.NewFake()
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Before: func(op string) error {
		mu.Lock()
		on := gated
		mu.Unlock()
		switch {
		case on && op == "AddEntry":
			once.Do(func() { close(addBegan) })
			return waitOrFail(release, "the gate")
		case on && op == "DelEntry":
			delOnce.Do(func() { close(partialDeletes) }) // written before the batch: the bug
		}
		return nil
	}})
	h := newHarness(t, k, fake, func(o *Options) { o.BackgroundFull = true })
	addServices(h, n)
	h.mustSync(t)
	// Every set flushed behind our back: the next full sync finds their member counts
	// wrong, lists them empty and writes every member again, in one batch.
	for _, set := range proxier.Sets(h.syncer.cfg.Families) {
		entries, _ := fake.ListEntries(set.Name)
		var del []kernel.SetOp
		for _, e := range entries {
			del = append(del, kernel.SetOp{Set: set.Name, Entry: e, Delete: true})
		}
		for _, err := range fake.Kernel().Sets.WriteEntries(del) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	gated = true
	mu.Unlock()
	h.syncer.mu.Lock()
	h.syncer.fullRunning = true // as Sync sets it before starting one
	h.syncer.mu.Unlock()
	full := make(chan struct{})
	go func() { h.syncer.backgroundFull(); close(full) }()
	if err := waitOrFail(addBegan, "the batch"); err != nil {
		t.Fatal(err)
	}
	gone := proxier.ServiceKey{Namespace: "bench", Name: "svc-0"}
	h.src.DeleteService(gone)
	h.tracker.ServiceChanged(gone)
	partial := make(chan error, 1)
	go func() { partial <- h.syncer.Sync() }()
	// The partial sync's delete must not reach the kernel before the batch is released.
	select {
	case <-partialDeletes:
		t.Error("the partial sync's member delete went before the batch's adds")
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	if err := <-partial; err != nil {
		t.Fatalf("partial sync: %v", err)
	}
	<-full
	got, _ := fake.ListEntries("KUBE-CLUSTER-IP")
	for _, e := range got {
		if e.IP == mustAddr("10.100.0.0") {
			t.Errorf("the deleted Service's ClusterIP is in KUBE-CLUSTER-IP: the partial sync's delete went before the batch's add")
		}
	}
	if len(got) != n-1 {
		t.Errorf("KUBE-CLUSTER-IP holds %d, want %d", len(got), n-1)
	}
}
