package reconcile

import (
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/addrs"
)

// gateTimeout bounds the waits of these tests' kernel hooks, all of them together (a
// deadline), so that a broken order fails the sync instead of hanging the test.
const gateTimeout = 20 * time.Second

// gate returns a wait that fails once the deadline set now has passed.
func gate() func(c <-chan struct{}, what string) error {
	deadline := time.Now().Add(gateTimeout)
	return func(c <-chan struct{}, what string) error {
		select {
		case <-c:
			return nil
		case <-time.After(time.Until(deadline)):
			return errors.New("timed out waiting for " + what)
		}
	}
}

// TestAddressesWrittenAlongsideVirtualServers: a full sync with many addresses to bind
// sends them while it writes the virtual servers. The kernel lets the first bind
// proceed only once every virtual server is written, and the virtual-server writes only
// once the binds began: a sync that binds before (or after) writing the virtual servers
// fails one of them.
func TestAddressesWrittenAlongsideVirtualServers(t *testing.T) {
	const n = addrs.BackgroundAddresses + 100
	bindBegan, vssWritten := make(chan struct{}), make(chan struct{})
	var once sync.Once
	waitOrFail := gate()
	fake := kernel.NewFake()
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Before: func(op string) error {
		switch op {
		case "BindAddress":
			once.Do(func() { close(bindBegan) })
			return waitOrFail(vssWritten, "the virtual servers")
		case "AddVirtualServer":
			return waitOrFail(bindBegan, "the binds to begin")
		}
		return nil
	}})
	h := newHarness(t, k, fake)
	addServices(h, n)
	done := make(chan error, 1)
	go func() { done <- h.syncer.Sync() }()
	deadline := time.Now().Add(gateTimeout)
	for {
		if vss, _ := fake.ListVirtualServers(); len(vss) == n {
			close(vssWritten)
			break
		}
		if time.Now().After(deadline) {
			close(vssWritten)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("sync: %v", err)
	}
	if addrs, _ := fake.ListAddresses(proxier.DefaultDummyDevice); len(addrs) != n {
		t.Errorf("%d addresses bound, want %d", len(addrs), n)
	}
	assertSettled(t, h)
}

// TestPartialSyncAddressesAfterTheBatch: a partial sync that unbinds an address while a
// background full sync's batch (which binds it again, decided before) is in flight
// waits for the batch, so the unbind lands last and the address ends unbound.
func TestPartialSyncAddressesAfterTheBatch(t *testing.T) {
	const n = addrs.BackgroundAddresses + 100
	release, bindBegan, partialWaits := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var gated bool
	var mu sync.Mutex
	var once, waitOnce sync.Once
	waitOrFail := gate()
	fake := kernel.NewFake()
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Before: func(op string) error {
		mu.Lock()
		on := gated
		mu.Unlock()
		switch {
		case on && op == "BindAddress":
			once.Do(func() { close(bindBegan) })
			return waitOrFail(release, "the gate")
		case on && op == "UnbindAddress":
			waitOnce.Do(func() { close(partialWaits) }) // written before the batch: the bug
		}
		return nil
	}})
	h := newHarness(t, k, fake, func(o *Options) { o.BackgroundFull = true })
	addServices(h, n)
	h.mustSync(t)
	// Every address gone behind our back: the next full sync binds them all again.
	addrs, _ := fake.ListAddresses(proxier.DefaultDummyDevice)
	var unbind []kernel.AddressOp
	for _, a := range addrs {
		unbind = append(unbind, kernel.AddressOp{Addr: a, Unbind: true})
	}
	for _, err := range fake.Kernel().Addresses.WriteAddresses(proxier.DefaultDummyDevice, unbind) {
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	gated = true
	mu.Unlock()
	h.syncer.onAddrWait = func() { waitOnce.Do(func() { close(partialWaits) }) }
	h.syncer.mu.Lock()
	h.syncer.fullRunning = true // as Sync sets it before starting one
	h.syncer.mu.Unlock()
	full := make(chan struct{})
	go func() { h.syncer.backgroundFull(); close(full) }()
	if err := waitOrFail(bindBegan, "the batch"); err != nil {
		t.Fatal(err)
	}
	gone := proxier.ServiceKey{Namespace: "bench", Name: "svc-0"}
	h.src.DeleteService(gone)
	h.tracker.ServiceChanged(gone)
	partial := make(chan error, 1)
	go func() { partial <- h.syncer.Sync() }()
	if err := waitOrFail(partialWaits, "the partial sync's unbind"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-partial; err != nil {
		t.Fatalf("partial sync: %v", err)
	}
	<-full
	h.syncer.onAddrWait = nil
	bound, _ := fake.ListAddresses(proxier.DefaultDummyDevice)
	if slices.ContainsFunc(bound, func(a netip.Addr) bool { return a == mustAddr("10.100.0.0") }) {
		t.Errorf("the deleted Service's address is bound: the partial sync's unbind went before the batch's bind")
	}
	if len(bound) != n-1 {
		t.Errorf("%d addresses bound, want %d", len(bound), n-1)
	}
}
