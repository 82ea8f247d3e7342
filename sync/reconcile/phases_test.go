package reconcile

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestFullSyncSaysWhereItsTimeWent: the first sync logs at Info that the node is
// programmed, with the time of each step; a quick full sync after it logs only at Debug,
// a slow one at Info again.
func TestFullSyncSaysWhereItsTimeWent(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	clock := time.Unix(1000, 0)
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
		o.Logger = zap.New(core)
		// Every reading of the clock is 100 ms later: each step takes some time.
		o.Now = func() time.Time { clock = clock.Add(100 * time.Millisecond); return clock }
		o.SyncPeriod = time.Hour
	})
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	first := logs.FilterMessage("Node programmed (first sync)").All()
	if len(first) != 1 {
		t.Fatalf("first sync: %d 'Node programmed' lines, want 1; all: %v", len(first), logs.All())
	}
	f := first[0].ContextMap()
	for _, step := range []string{"took", "translate", "dump", "readRealServers", "setsListed", "sets", "ipvs", "addresses", "iptables", "conntrack"} {
		if d, ok := f[step].(time.Duration); !ok || d <= 0 {
			t.Errorf("%s = %v in the first sync's line %v", step, f[step], f)
		}
	}
	if f["services"] == int64(0) || f["virtualServers"] == int64(0) || f["realServers"] == int64(0) || f["why"] != "first" {
		t.Errorf("counts and why in the first sync's line: %v", f)
	}

	logs.TakeAll()
	h.syncer.needFull = true
	h.mustSync(t) // a few seconds: under slowFullSync
	if n := logs.Len(); n != 0 {
		t.Errorf("a quick full sync logged at Info: %v", logs.All())
	}
	h.syncer.needFull = true
	o := h.syncer.opts.Now
	h.syncer.opts.Now = func() time.Time { clock = clock.Add(slowFullSync); return o() }
	h.mustSync(t)
	if slow := logs.FilterMessage("Slow full sync").All(); len(slow) != 1 || slow[0].ContextMap()["why"] != "needed" {
		t.Errorf("a slow full sync: %v, want one 'Slow full sync' line, why needed", logs.All())
	}
}

// TestSlowPartialSyncSaysWhereItsTimeWent: a partial sync that takes slowPartialSync or
// more logs at Info where its time went; a quick one logs nothing at Info.
func TestSlowPartialSyncSaysWhereItsTimeWent(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	clock := time.Unix(1000, 0)
	step := time.Millisecond // each reading of the clock is this much later
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
		o.Logger = zap.New(core)
		o.Now = func() time.Time { clock = clock.Add(step); return clock }
		o.SyncPeriod = time.Hour
	})
	addServices(h, 3)
	h.mustSync(t)
	logs.TakeAll()
	changeThree(h)
	h.mustSync(t)
	if n := logs.Len(); n != 0 {
		t.Errorf("a quick partial sync logged at Info: %v", logs.All())
	}
	step = slowPartialSync / 4
	changeThree(h)
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "bench", Name: "svc-0"})
	h.mustSync(t)
	slow := logs.FilterMessage("Slow partial sync").All()
	if len(slow) != 1 {
		t.Fatalf("a slow partial sync: %v, want one 'Slow partial sync' line", logs.All())
	}
	f := slow[0].ContextMap()
	for _, name := range []string{"took", "translate", "sets", "ipvs", "addresses", "members", "iptables", "reapAndHealthChecks"} {
		if d, ok := f[name].(time.Duration); !ok || d <= 0 {
			t.Errorf("%s = %v in the slow partial sync's line %v", name, f[name], f)
		}
	}
}
