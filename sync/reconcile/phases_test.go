package reconcile

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
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
	for _, step := range []string{"took", "translate", "dump", "readRealServers", "sets", "ipvs", "addresses", "iptables", "conntrack"} {
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
