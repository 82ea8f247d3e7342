package reconcile

import (
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// hasVS reports whether the fake kernel holds the virtual server k.
func hasVS(f *kernel.Fake, k kernel.VSKey) bool {
	vss, _ := f.ListVirtualServers()
	return slices.ContainsFunc(vss, func(v kernel.DumpedVS) bool { return v.VSKey == k })
}

// changeThree adds Service "new", deletes svc-1 and gives svc-2 a fifth endpoint.
func changeThree(h *harness) {
	h.tracker.ServiceChanged(h.src.SetService(svc("bench", "new", "10.99.0.1", 80, v1.ProtocolTCP)))
	h.src.SetSlice(slice("bench", "new", "new-1", 80, v1.ProtocolTCP, "10.1.1.1"))
	gone := proxier.ServiceKey{Namespace: "bench", Name: "svc-1"}
	h.src.DeleteService(gone)
	h.tracker.ServiceChanged(gone)
	k, _ := h.src.SetSlice(slice("bench", "svc-2", "svc-2-1", 8080, v1.ProtocolTCP, "10.128.0.2", "10.144.0.2", "10.160.0.2", "10.176.0.2", "10.200.0.2"))
	h.tracker.ServiceChanged(k)
}

// assertSettled fails t unless a full sync now finds nothing to write: the cache and the
// kernel agree.
func assertSettled(t *testing.T, h *harness) {
	t.Helper()
	h.fake.ResetOps()
	h.tracker.AllChanged() // a full sync, inline
	h.mustSync(t)
	if m := mutations(h.fake.Ops()); len(m) != 0 {
		t.Errorf("the next full sync still wrote %v", m)
	}
}

// afterRead is the fake kernel with a callback after each read of a full sync: the
// virtual-server dump, and each virtual server's real servers.
type afterRead struct {
	*kernel.Fake
	after func(op string, k kernel.VSKey)
}

func (a afterRead) ListVirtualServers() ([]kernel.DumpedVS, error) {
	vss, err := a.Fake.ListVirtualServers()
	a.after("ListVirtualServers", kernel.VSKey{})
	return vss, err
}

func (a afterRead) ListRealServers(k kernel.VSKey) ([]kernel.RealServer, error) {
	rss, err := a.Fake.ListRealServers(k)
	a.after("ListRealServers", k)
	return rss, err
}

// TestFullSyncKeepsWhatAPartialSyncWroteDuringItsReads: a partial sync that runs while a
// full sync reads the kernel (a new Service, a deleted one, a new endpoint) is not undone
// or redone by the full sync, whose reads are older than those writes: whether it runs
// after the virtual-server dump, or after svc-2's real servers were read.
func TestFullSyncKeepsWhatAPartialSyncWroteDuringItsReads(t *testing.T) {
	svc2 := kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.100.0.2"), Port: 80}
	for _, after := range []string{"ListVirtualServers", "ListRealServers"} {
		t.Run(after, func(t *testing.T) {
			fake := kernel.NewFake()
			var h *harness
			armed := false
			var inner map[string]int
			k := fake.Kernel()
			k.IPVS = afterRead{fake, func(op string, key kernel.VSKey) {
				if !armed || op != after || op == "ListRealServers" && key != svc2 {
					return
				}
				armed = false
				changeThree(h)
				if err := h.syncer.Sync(); err != nil { // partial: a full sync runs
					t.Errorf("partial sync during the reads: %v", err)
				}
				inner = mutations(fake.Ops())
			}}
			h = newHarness(t, k, fake)
			addServices(h, 3)
			h.mustSync(t)
			fake.ResetOps()
			armed = true
			h.tracker.AllChanged()
			h.mustSync(t)
			if inner == nil {
				t.Fatal("no partial sync ran during the full sync's reads")
			}
			if inner["AddVirtualServer"] != 1 || inner["DeleteVirtualServer"] != 1 || inner["AddRealServer"] != 2 {
				t.Errorf("the partial sync wrote %v", inner)
			}
			if all := mutations(fake.Ops()); !maps.Equal(all, inner) {
				t.Errorf("the full sync wrote more than the partial sync inside it: %v, the partial sync %v", all, inner)
			}
			if !hasVS(fake, kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.99.0.1"), Port: 80}) {
				t.Error("the new Service's virtual server is gone")
			}
			assertSettled(t, h)
		})
	}
}

// TestBackgroundFullSyncLetsPartialSyncsThrough: with BackgroundFull, a periodic full sync
// that is reading the kernel holds up no change, and still repairs drift.
func TestBackgroundFullSyncLetsPartialSyncsThrough(t *testing.T) {
	fake := kernel.NewFake()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC).UnixNano())
	reading, release := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Before: func(op string) error {
		if op == "ListVirtualServers" && armed.CompareAndSwap(true, false) {
			close(reading)
			<-release
		}
		return nil
	}})
	h := newHarness(t, k, fake, func(o *Options) {
		o.BackgroundFull = true
		o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	addServices(h, 3)
	h.mustSync(t) // the first full sync: inline
	drifted := kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.100.0.0"), Port: 80}
	if err := fake.DeleteVirtualServer(drifted); err != nil { // by hand
		t.Fatal(err)
	}
	armed.Store(true)
	clock.Add(int64(31 * time.Second))
	h.mustSync(t) // starts the periodic full sync in the background
	select {
	case <-reading:
	case <-time.After(10 * time.Second):
		t.Fatal("no full sync began")
	}
	changeThree(h)
	done := make(chan error, 1)
	go func() { done <- h.syncer.Sync() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("partial sync: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a partial sync waited for the full sync's reads")
	}
	if !hasVS(fake, kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.99.0.1"), Port: 80}) {
		t.Error("the change was not programmed while the full sync read")
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for !hasVS(fake, drifted) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !hasVS(fake, drifted) {
		t.Fatal("the background full sync did not repair the virtual server deleted by hand")
	}
	for h.syncer.Snapshot().Status.LastSync.IsZero() || !h.syncer.Status().LastFull {
		if time.Now().After(deadline) {
			t.Fatal("the background full sync did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	assertSettled(t, h)
}

// TestFullSyncReadsRealServersUnlocked: a full sync lists real servers with the
// syncer's lock released, on the first sync (all of them) as on later ones.
func TestFullSyncReadsRealServersUnlocked(t *testing.T) {
	fake := kernel.NewFake()
	var h *harness
	reads, locked := 0, 0
	k := fake.Kernel()
	k.IPVS = afterRead{fake, func(op string, _ kernel.VSKey) {
		if op != "ListRealServers" {
			return
		}
		reads++
		if !h.syncer.mu.TryLock() {
			locked++
			return
		}
		h.syncer.mu.Unlock()
	}}
	h = newHarness(t, k, fake)
	addServices(h, 50)
	must(t, fake.AddVirtualServer(kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.100.0.1"), Port: 80}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}))
	h.mustSync(t)
	h.tracker.AllChanged()
	h.mustSync(t)
	if reads < 51 || locked != 0 {
		t.Errorf("%d real-server lists, %d of them under the lock; want 51 (one adopted at the first sync, 50 at the second), none", reads, locked)
	}
}

// TestBackgroundFullLeavesChangesToPartialSyncs: a background full sync does not take
// the changes waiting in the tracker (it would program them only at its end, 15-18 s
// later on each CheckEvery-th round at 30,000 Services in the VM); the next partial
// sync, which may run during its reads, programs them.
func TestBackgroundFullLeavesChangesToPartialSyncs(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.BackgroundFull = true })
	addServices(h, 3)
	h.mustSync(t)
	changeThree(h)
	h.syncer.mu.Lock()
	h.syncer.fullRunning = true // as Sync sets it before starting one
	h.syncer.mu.Unlock()
	h.syncer.backgroundFull()
	if n := h.tracker.Pending(); n != 3 {
		t.Fatalf("%d changed Services left in the tracker after the background full sync, want 3", n)
	}
	h.mustSync(t)
	if !hasVS(h.fake, kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.99.0.1"), Port: 80}) {
		t.Error("the partial sync after it did not program the new Service")
	}
	assertSettled(t, h)
}
