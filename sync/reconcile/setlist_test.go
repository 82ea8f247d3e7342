package reconcile

import (
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// afterList is the fake kernel with a callback after each listing of a set.
type afterList struct {
	*kernel.Fake
	after func(set string)
}

func (a afterList) ListEntries(name string) ([]kernel.SetEntry, error) {
	es, err := a.Fake.ListEntries(name)
	a.after(name)
	return es, err
}

func (a afterList) EachEntry(name string, restart func(), each func(kernel.SetEntry)) error {
	err := a.Fake.EachEntry(name, restart, each)
	a.after(name)
	return err
}

// TestFullSyncListsSetsUnlocked: a full sync lists its sets with the syncer's lock
// released, and a partial sync that programs a new Service, removes one and adds an
// endpoint meanwhile keeps its set members: the full sync's older listing neither
// reverts nor loses them; a change to every Service meanwhile is followed by another
// full sync.
func TestFullSyncListsSetsUnlocked(t *testing.T) {
	fake := kernel.NewFake()
	var h *harness
	armed, lists, locked, inner := false, 0, 0, false
	k := fake.Kernel()
	k.Sets = afterList{fake, func(set string) {
		lists++
		if !h.syncer.mu.TryLock() {
			locked++
			return // a partial sync now would wait for this full sync
		}
		h.syncer.mu.Unlock()
		if !armed || set != "KUBE-CLUSTER-IP" {
			return
		}
		armed, inner = false, true
		changeThree(h)
		if err := h.syncer.Sync(); err != nil {
			t.Errorf("partial sync during the set listing: %v", err)
		}
		h.tracker.AllChanged() // a node change: every Service again
		if err := h.syncer.Sync(); err != nil {
			t.Errorf("sync during the set listing: %v", err)
		}
	}}
	h = newHarness(t, k, fake)
	addServices(h, 3)
	h.mustSync(t)
	armed, lists, locked = true, 0, 0
	h.tracker.AllChanged()
	h.mustSync(t)
	if lists == 0 || locked != 0 || !inner {
		t.Fatalf("%d set listings, %d of them under the lock, a partial sync inside: %v; want every listing unlocked and one partial sync", lists, locked, inner)
	}
	if !h.syncer.needFull {
		t.Error("a change to every Service during the set listing did not ask for another full sync")
	}
	ips, err := fake.ListEntries("KUBE-CLUSTER-IP")
	if err != nil {
		t.Fatal(err)
	}
	entry := func(ip string) kernel.SetEntry {
		return kernel.SetEntry{IP: mustAddr(ip), Protocol: kernel.TCP, Port: 80}
	}
	if !slices.Contains(ips, entry("10.99.0.1")) || slices.Contains(ips, entry("10.100.0.1")) {
		t.Errorf("KUBE-CLUSTER-IP after the full sync: %v; want the new Service's 10.99.0.1 and not the deleted svc-1's 10.100.0.1", ips)
	}
	assertSettled(t, h)
}
