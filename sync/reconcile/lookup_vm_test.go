package reconcile

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// TestFullSyncLookupsRealKernel: on the VM's kernel, with every full sync past the first
// looking up (dumpAllUpTo 0), `ipvsadm -C` is repaired by the next full sync, which the
// lookups turn into a dump of everything, and a scheduler changed with `ipvsadm -E` is
// repaired within CheckEvery full syncs.
func TestFullSyncLookupsRealKernel(t *testing.T) {
	s, src, full := vmLookupSyncer(t)
	const n = 200
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		src.SetService(svc("bench", name, fmt.Sprintf("10.97.%d.%d", i/250, i%250+1), 80, v1.ProtocolTCP))
		src.SetSlice(slice("bench", name, name+"-1", 8080, v1.ProtocolTCP, fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)))
	}
	full() // the first: dumps
	want := sh(t, "ipvsadm -Sn | sort")
	if got := strings.Count(want, "-A -t 10.97."); got != n {
		t.Fatalf("%d virtual servers programmed, want %d", got, n)
	}
	full()
	if s.dumpedAll {
		t.Fatal("the second full sync dumped everything: no lookups to test")
	}
	sh(t, "ipvsadm -C")
	full()
	if !s.dumpedAll {
		t.Error("the full sync after `ipvsadm -C` did not dump everything")
	}
	if got := sh(t, "ipvsadm -Sn | sort"); got != want {
		t.Errorf("`ipvsadm -C` not repaired by the next full sync:\n%s", got)
	}
	sh(t, "ipvsadm -E -t 10.97.0.9:80 -s wrr")
	for range 10 {
		full()
	}
	if got := sh(t, "ipvsadm -Sn | sort"); got != want {
		t.Errorf("a scheduler changed by hand not repaired within 10 full syncs:\n%s", got)
	}
}

// vmLookupSyncer is a syncer on the VM's kernel (reset before and after the test) with
// CheckEvery 10 and every full sync past the first looking up (dumpAllUpTo 0), its
// source, and a function that runs one full sync inline.
func vmLookupSyncer(t *testing.T) (*Syncer, *source.StaticSource, func()) {
	t.Helper()
	return vmLookupSyncerLogging(t, nil)
}

// vmLookupSyncerLogging is vmLookupSyncer with log given to the Syncer and every
// reconciler it builds (nil: none).
func vmLookupSyncerLogging(t *testing.T, log *zap.Logger) (*Syncer, *source.StaticSource, func()) {
	t.Helper()
	kerneltest.RequireIPVS(t)
	rk := &realKernel{k: linuxKernel(t)}
	rk.reset(t)
	t.Cleanup(func() { rk.reset(t) })
	src := source.NewStaticSource()
	tracker := source.NewTracker(nil)
	s := NewSyncer(Options{Config: proxier.Config{NodeName: "vm"}, CheckEvery: 10, Logger: log}, rk.k, src, tracker)
	s.dumpAllUpTo = 0
	return s, src, func() {
		t.Helper()
		tracker.AllChanged()
		if err := s.Sync(); err != nil {
			t.Fatalf("full sync: %v", err)
		}
	}
}
