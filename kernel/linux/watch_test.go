package linux

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestWatchAddressesReal: an address added on an interface is reported; one added on the
// skipped interface is not, nor a renewal of one already reported.
func TestWatchAddressesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	// No IPv6 link-local addresses: one made as the link comes up ends its DAD a second
	// or two later with a notification the watch has not seen, a real change that fell
	// into the renewal check below now and then.
	for _, args := range [][]string{{"link", "add", "wa0", "type", "veth", "peer", "name", "skipme"},
		{"link", "set", "wa0", "addrgenmode", "none"}, {"link", "set", "skipme", "addrgenmode", "none"},
		{"link", "set", "wa0", "up"}, {"link", "set", "skipme", "up"}} {
		if out, err := execOut("ip", args...); err != nil {
			t.Fatal(out, err)
		}
	}
	defer func() { _, _ = execOut("ip", "link", "del", "wa0") }()
	done := make(chan struct{})
	defer close(done)
	var calls, skips atomic.Int32
	if err := WatchAddresses("skipme", done, func() { calls.Add(1) }, func(watching bool) {
		if watching {
			skips.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n := skips.Load(); n != 1 {
		t.Fatalf("%d reports to skipped once subscribed, want 1", n)
	}
	if err := bind("skipme", netip.MustParseAddr("10.99.0.2")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls for an address on the skipped interface", n)
	}
	if n := skips.Load(); n != 2 {
		t.Errorf("%d reports to skipped after an address was added to it, want 2 (the subscription, the address)", n)
	}
	// Its removal too: a hand's `ip addr del` on the dummy is drift the syncer repairs.
	if out, err := execOut("ip", "addr", "del", "10.99.0.2/32", "dev", "skipme"); err != nil {
		t.Fatal(out, err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := skips.Load(); n != 3 {
		t.Errorf("%d reports to skipped after its address was removed, want 3", n)
	}
	if err := bind("wa0", netip.MustParseAddr("10.99.0.1")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if calls.Load() == 0 {
		t.Fatal("no call after an address was added")
	}
	// A renewal of the address's lifetimes (what a router advertisement does to a SLAAC
	// address): the kernel notifies it as a new address, and the watch calls nothing.
	time.Sleep(300 * time.Millisecond)
	before := calls.Load()
	seen := make(chan netlink.AddrUpdate, 16)
	if err := netlink.AddrSubscribe(seen, done); err != nil {
		t.Fatal(err)
	}
	if out, err := execOut("ip", "addr", "change", "10.99.0.1/32", "dev", "wa0", "valid_lft", "3600", "preferred_lft", "1800"); err != nil {
		t.Fatal(out, err)
	}
	notified := false
	for timeout := time.After(3 * time.Second); !notified; {
		select {
		case u := <-seen:
			notified = u.NewAddr && u.LinkAddress.IP.Equal(net.ParseIP("10.99.0.1"))
		case <-timeout:
			t.Fatal("the kernel sent no notification for the renewal: the test proves nothing")
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := calls.Load() - before; n != 0 {
		t.Errorf("%d calls for a renewal of an address already reported", n)
	}
}

// TestWatchAddressesResubscribes: vishvananda/netlink ends an address subscription on
// its first receive error (ENOBUFS when notifications overflow the socket); the watch
// must open a new one and ask for a full sync, not stop following the node's addresses.
func TestWatchAddressesResubscribes(t *testing.T) {
	defer func(d time.Duration) { resubscribeDelay = d }(resubscribeDelay)
	resubscribeDelay = time.Millisecond
	subs, opts, changed := fakeWatch(t)
	first := <-subs
	if !fakeWatching.Load() {
		t.Error("skipped(true) not called once subscribed")
	}
	(*opts)[0].ErrorCallback(errors.New("Receive failed: no buffer space available"))
	close(first) // what the library does after the error
	var second chan<- netlink.AddrUpdate
	select {
	case second = <-subs:
	case <-time.After(30 * time.Second):
		t.Fatal("no new subscription after the first one ended")
	}
	// The node's addresses are those of the first subscription's start: the lost
	// notifications were the dummy's (a cold start's binds), and no full sync is asked for.
	time.Sleep(50 * time.Millisecond)
	select {
	case <-changed:
		t.Error("a full sync asked for after an overflow that changed no address of the node")
	default:
	}
	// Unsubscribed, then subscribed again: the dummy's addresses are dumped while no
	// one watches, and once more after (what changed in between).
	if w := fakeWatchReports.Load(); w != "true,false,true" {
		t.Errorf("skipped was told %q, want true,false,true", w)
	}
	// An address of the node's came or went while notifications were lost: one full sync.
	fakeNodeAddrs.Store([]netip.Addr{netip.MustParseAddr("192.168.7.1"), netip.MustParseAddr("192.168.7.2")})
	(*opts)[1].ErrorCallback(errors.New("Receive failed: no buffer space available"))
	close(second)
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no full sync asked for after an overflow that hid a new address")
	}
	if (*opts)[0].ReceiveBufferSize < 1<<20 {
		t.Errorf("receive buffer %d, want a large one", (*opts)[0].ReceiveBufferSize)
	}
}

// TestWatchAddressesIgnoresRenewals: a notification for an address already reported (a
// router advertisement renewing a SLAAC address's lifetime) calls nothing; a new
// address, a removal and a re-addition each call once.
func TestWatchAddressesIgnoresRenewals(t *testing.T) {
	subs, _, changed := fakeWatch(t)
	ch := <-subs
	slaac := net.IPNet{IP: net.ParseIP("fec0::5054:ff:fe12:3456"), Mask: net.CIDRMask(64, 128)}
	const link = 1 << 30 // no such interface: not the skipped one
	for i, step := range []struct {
		add  bool
		want bool
	}{{true, true}, {true, false}, {true, false}, {false, true}, {true, true}} {
		ch <- netlink.AddrUpdate{LinkAddress: slaac, LinkIndex: link, NewAddr: step.add}
		wait := time.Second // for a call that must not come
		if step.want {
			wait = 30 * time.Second
		}
		select {
		case <-changed:
			if !step.want {
				t.Errorf("step %d (add %v): a call for an address already reported", i, step.add)
			}
		case <-time.After(wait):
			if step.want {
				t.Errorf("step %d (add %v): no call", i, step.add)
			}
		}
	}
}

// fakeWatch runs WatchAddresses on a fake subscription until the test ends: subs yields
// each subscription's channel, opts their options, changed a value per call.
func fakeWatch(t *testing.T) (subs chan chan<- netlink.AddrUpdate, opts *[]netlink.AddrSubscribeOptions, changed chan struct{}) {
	saved, savedAddrs := subscribe, nodeAddresses
	t.Cleanup(func() { subscribe, nodeAddresses = saved, savedAddrs })
	fakeNodeAddrs.Store([]netip.Addr{netip.MustParseAddr("192.168.7.1")})
	nodeAddresses = func(string) ([]netip.Addr, error) { return fakeNodeAddrs.Load().([]netip.Addr), nil }
	subs, opts, changed = make(chan chan<- netlink.AddrUpdate, 4), &[]netlink.AddrSubscribeOptions{}, make(chan struct{}, 16)
	subscribe = func(ch chan<- netlink.AddrUpdate, _ <-chan struct{}, o netlink.AddrSubscribeOptions) error {
		*opts = append(*opts, o)
		subs <- ch
		return nil
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	fakeWatching.Store(false)
	fakeWatchReports.Store("")
	skipped := func(watching bool) {
		fakeWatching.Store(watching)
		if r := fakeWatchReports.Load().(string); r == "" {
			fakeWatchReports.Store(fmt.Sprint(watching))
		} else {
			fakeWatchReports.Store(r + "," + fmt.Sprint(watching))
		}
	}
	if err := WatchAddresses("skipme", done, func() { changed <- struct{}{} }, skipped); err != nil {
		t.Fatal(err)
	}
	return subs, opts, changed
}

// fakeWatching is the last value fakeWatch's watch gave skipped; fakeWatchReports all of
// them, comma-separated.
var (
	fakeNodeAddrs    atomic.Value // []netip.Addr: the node's addresses fakeWatch's watch reads
	fakeWatching     atomic.Bool
	fakeWatchReports atomic.Value
)
