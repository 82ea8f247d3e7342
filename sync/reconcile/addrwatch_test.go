package reconcile

import (
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestFullSyncTrustsWatchedAddresses: past dumpAllUpTo virtual servers, a full sync that
// looks up instead of dumping dumps the dummy's addresses only while no address watch is
// open or when the watch reported a change since; so an address unbound by hand (which
// the watch reports) is still bound again by the next full sync.
func TestFullSyncTrustsWatchedAddresses(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 10 })
	h.syncer.dumpAllUpTo = 100
	addServices(h, 1000)
	h.mustSync(t) // the first full sync dumps everything
	want := h.fake.Dump()

	// No watch: every full sync dumps them.
	if ops := fullSyncOps(t, h); ops["ListAddresses"] != 1 {
		t.Errorf("with no address watch a full sync dumped the addresses %d times, want 1", ops["ListAddresses"])
	}
	h.syncer.DummyAddressesChanged(true) // subscribed
	if ops := fullSyncOps(t, h); ops["ListAddresses"] != 1 {
		t.Errorf("the full sync after the watch began dumped the addresses %d times, want 1 (what changed before it)", ops["ListAddresses"])
	}
	light, dumps := 0, 0
	for range 10 {
		ops := fullSyncOps(t, h)
		if ops["ListVirtualServers"] == 0 {
			light++
			dumps += ops["ListAddresses"]
		}
	}
	if light == 0 || dumps != 0 {
		t.Errorf("%d light full syncs with a watch and no change dumped the addresses %d times, want 0", light, dumps)
	}

	// `ip addr del` on the dummy by hand: the watch reports it.
	gone := netip.MustParseAddr("10.100.0.9")
	must(t, h.fake.UnbindAddress("kube-ipvs0", gone))
	h.syncer.DummyAddressesChanged(true)
	ops := fullSyncOps(t, h)
	if ops["ListVirtualServers"] != 0 {
		t.Fatal("the round after the unbind dumped every virtual server: the test proves nothing of the light round")
	}
	if got := h.fake.Dump(); got != want {
		t.Errorf("an address unbound by hand, and reported, not bound again by the next full sync:\n%s", diffLines(got, want))
	}

	// The subscription ended: notifications may be lost, so every full sync dumps again.
	h.syncer.DummyAddressesChanged(false)
	for range 3 {
		if ops := fullSyncOps(t, h); ops["ListAddresses"] != 1 {
			t.Errorf("with the watch's subscription ended a full sync dumped the addresses %d times, want 1", ops["ListAddresses"])
		}
	}
}
