package reconcile

import (
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// fullSyncOps runs one full sync (inline) and returns the kernel operations it made.
func fullSyncOps(t *testing.T, h *harness) map[string]int {
	t.Helper()
	h.fake.ResetOps()
	h.tracker.AllChanged()
	h.mustSync(t)
	return h.fake.Ops()
}

// TestFullSyncLooksUpInsteadOfDumping: past dumpAllUpTo virtual servers, a periodic full
// sync looks up the tenth it checks instead of dumping every virtual server, and dumps
// them all on each CheckEvery-th round; the counters of those not looked up are kept
// from their last read, not lost; and a lookup that finds ours gone (`ipvsadm -C`) makes
// that same full sync dump them all, so the node is whole after it.
func TestFullSyncLooksUpInsteadOfDumping(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 10 })
	h.syncer.dumpAllUpTo = 100
	addServices(h, 1000)
	h.mustSync(t) // round 1: the first full sync dumps
	want := h.fake.Dump()
	busy := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.100.0.7"), Port: 80}
	h.fake.AddTraffic(busy, kernel.VSStats{Connections: 5})
	dumps := 0
	for range 10 { // rounds 2-11
		ops := fullSyncOps(t, h)
		dumps += ops["ListVirtualServers"]
		if ops["ListVirtualServers"] == 0 && ops["LookupVirtualServers"] != 1 {
			t.Errorf("a full sync neither dumped nor looked up: %v", ops)
		}
		if n := ops["ListRealServers"]; n > 200 {
			t.Errorf("a full sync read the real servers of %d of 1,000 virtual servers, want about 100", n)
		}
		if m := mutations(ops); len(m) != 0 {
			t.Errorf("a full sync with nothing to repair wrote %v", m)
		}
	}
	if dumps != 1 {
		t.Errorf("10 full syncs dumped every virtual server %d times, want 1 (the 10th round)", dumps)
	}
	if got := statsOf(h, busy).Connections; got != 5 {
		t.Errorf("after 10 full syncs the snapshot counts %d connections of %s, want 5", got, busy)
	}

	// `ipvsadm -C` between two rounds that look up (12 and 13).
	vss, _ := h.fake.ListVirtualServers()
	for _, d := range vss {
		must(t, h.fake.DeleteVirtualServer(d.VSKey))
	}
	ops := fullSyncOps(t, h)
	if ops["LookupVirtualServers"] != 1 || ops["ListVirtualServers"] != 1 {
		t.Errorf("the full sync after `ipvsadm -C` looked up %d and dumped %d times, want 1 and 1", ops["LookupVirtualServers"], ops["ListVirtualServers"])
	}
	if got := h.fake.Dump(); got != want {
		t.Errorf("`ipvsadm -C` not repaired by the next full sync:\n%s", diffLines(got, want))
	}
}

// TestFullSyncLookupRepairsWithinCheckEvery: a virtual server changed by hand
// (`ipvsadm -E`) outside the tenth looked up is repaired within CheckEvery full syncs,
// by its lookup or by the CheckEvery-th round's dump.
func TestFullSyncLookupRepairsWithinCheckEvery(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 10 })
	h.syncer.dumpAllUpTo = 100
	addServices(h, 1000)
	h.mustSync(t)
	want := h.fake.Dump()
	key := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.100.0.9"), Port: 80}
	vs := kernel.VirtualServer{VSKey: key, VSSettings: kernel.VSSettings{Scheduler: "wrr"}}
	must(t, h.fake.UpdateVirtualServer(vs))
	for range 10 {
		fullSyncOps(t, h)
	}
	if got := h.fake.Dump(); got != want {
		t.Errorf("a scheduler changed by hand not repaired within 10 full syncs:\n%s", diffLines(got, want))
	}
}

// TestLookupMissingOnlyCountsDrift: a virtual server a partial sync deleted while a full
// sync's lookups ran is not drift, so it asks for no dump of everything.
func TestLookupMissingOnlyCountsDrift(t *testing.T) {
	fake := kernel.NewFake()
	var h *harness
	armed := false
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Before: func(op string) error {
		if armed && op == "LookupVirtualServers" {
			armed = false
			changeThree(h) // deletes svc-1, among others
			if err := h.syncer.Sync(); err != nil {
				t.Errorf("partial sync during the lookups: %v", err)
			}
		}
		return nil
	}})
	h = newHarness(t, k, fake)
	h.syncer.dumpAllUpTo = 0
	addServices(h, 20)
	h.mustSync(t)
	svc1 := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.100.0.1"), Port: 80}
	// A round that looks svc-1 up: with some CheckEvery, its turn in the rotation never
	// falls on a round that looks up (it falls on the dump's).
	for i := 0; !h.syncer.ipvs.CheckRealServersNow(svc1, h.syncer.fullRound+1) || h.syncer.heavyDue(h.syncer.opts.CheckEvery, h.syncer.opts.BackgroundFull); i++ {
		if i == 8 {
			t.Fatal("svc-1 never comes up for a lookup")
		}
		h.syncer.opts.CheckEvery = 2 + i/2
		h.syncer.ipvs.SetCheckEvery(h.syncer.opts.CheckEvery)
		fullSyncOps(t, h)
	}
	armed = true
	ops := fullSyncOps(t, h) // looks up svc-1, which the partial sync deletes first
	if armed {
		t.Fatal("no lookup ran")
	}
	if ops["ListVirtualServers"] != 0 {
		t.Errorf("a virtual server deleted by a partial sync during the lookups was taken for drift: %d dumps", ops["ListVirtualServers"])
	}
	assertSettled(t, h)
}

// statsOf is key's counters as the syncer last published them (the harness keeps
// every virtual server's: no VSSeriesLimit).
func statsOf(h *harness, key kernel.VSKey) kernel.VSStats {
	stats, _ := h.syncer.VSStats()
	for _, o := range stats.Busiest {
		if o.Key == key {
			return o.Stats
		}
	}
	return kernel.VSStats{}
}

// TestLightFullSyncAppliesChanges: a full sync that looks up instead of dumping compares
// only what it looked up and what changed since the last sync (ipvs.Reconciler.ApplyLooked), so the
// changes it brings (a Service added with a new address, one deleted, one's endpoints
// changed) must be in that; the node ends as a full compare would leave it.
func TestLightFullSyncAppliesChanges(t *testing.T) {
	build := func() *harness {
		h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 10 })
		h.syncer.dumpAllUpTo = 100
		addServices(h, 1000)
		h.mustSync(t)
		h.syncer.DummyAddressesChanged(true) // a watch: the next light round trusts the cached addresses
		h.tracker.AllChanged()
		h.mustSync(t)
		return h
	}
	ref := build()
	changeThree(ref)
	ref.syncer.dumpAllUpTo = 1 << 30 // every full sync dumps and compares everything
	ref.tracker.AllChanged()
	ref.mustSync(t)
	want := ref.fake.Dump()

	h := build()
	changeThree(h)
	h.tracker.AllChanged()
	h.mustSync(t)
	if h.syncer.dumpedAll || h.syncer.dumpedAddrs {
		t.Fatal("the full sync dumped the virtual servers or addresses: the test proves nothing of the light round")
	}
	if got := h.fake.Dump(); got != want {
		t.Errorf("a light full sync did not program the changes since the last sync:\n%s", diffLines(got, want))
	}
}

// TestHeavyRoundOnlyInTheBackground: with BackgroundFull, a full sync run inline (a
// change to every Service) does not take the heavy round (every virtual server dumped,
// every set listed), which holds the runner for as long as it takes; the next one in
// the background does, or an inline one once it is overdue by another CheckEvery.
func TestHeavyRoundOnlyInTheBackground(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 10; o.BackgroundFull = true })
	h.syncer.dumpAllUpTo = 100
	addServices(h, 1000)
	h.mustSync(t) // the first: inline, dumps and lists everything
	for i := range 15 {
		ops := fullSyncOps(t, h) // AllChanged: inline
		if ops["ListVirtualServers"] != 0 || ops["ListEntries"] != 0 {
			t.Fatalf("inline full sync %d dumped every virtual server %d times and listed %d sets, want none", i+2, ops["ListVirtualServers"], ops["ListEntries"])
		}
	}
	h.fake.ResetOps()
	h.syncer.mu.Lock()
	h.syncer.fullRunning = true // as Sync sets it before starting one
	h.syncer.mu.Unlock()
	h.syncer.backgroundFull()
	if ops := h.fake.Ops(); ops["ListVirtualServers"] != 1 || ops["ListEntries"] == 0 {
		t.Errorf("the background full sync after them dumped every virtual server %d times and listed %d sets, want 1 and every set", ops["ListVirtualServers"], ops["ListEntries"])
	}
	// Only inline full syncs from now on: one of 20 takes the overdue heavy round.
	heavy := 0
	for range 20 {
		heavy += fullSyncOps(t, h)["ListVirtualServers"]
	}
	if heavy != 1 {
		t.Errorf("20 inline full syncs, no background one, took the heavy round %d times, want 1 (overdue by CheckEvery)", heavy)
	}
}
