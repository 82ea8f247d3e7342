package linux

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchAddressesReal: an address added on an interface is reported; one added on the
// skipped interface is not.
func TestWatchAddressesReal(t *testing.T) {
	requireNetns(t)
	for _, args := range [][]string{{"link", "add", "wa0", "type", "veth", "peer", "name", "skipme"}, {"link", "set", "wa0", "up"}, {"link", "set", "skipme", "up"}} {
		if out, err := execOut("ip", args...); err != nil {
			t.Fatal(out, err)
		}
	}
	defer func() { _, _ = execOut("ip", "link", "del", "wa0") }()
	done := make(chan struct{})
	defer close(done)
	var calls atomic.Int32
	if err := WatchAddresses("skipme", done, func() { calls.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := (Addresses{}).BindAddress("skipme", netip.MustParseAddr("10.99.0.2")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls for an address on the skipped interface", n)
	}
	if err := (Addresses{}).BindAddress("wa0", netip.MustParseAddr("10.99.0.1")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if calls.Load() == 0 {
		t.Error("no call after an address was added")
	}
}
