package reconcile

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestDummyDeviceMustBeADummy: --dummy-device naming a real interface (eth0) is refused
// before anything is written; adopting it would bind every VIP to eth0 and unbind the
// node's own address at the first full sync.
func TestDummyDeviceMustBeADummy(t *testing.T) {
	fake := kernel.NewFake()
	fake.AddRealLink("eth0")
	h := newHarness(t, kernel.Kernel{}, fake, func(o *Options) { o.Config.DummyDevice = "eth0" })
	h.src.SetService(svc("ns", "a", "10.96.0.10", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "a", "a-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
	h.tracker.AllChanged()
	err := h.syncer.Sync()
	if !errors.Is(err, kernel.ErrNotDummy) {
		t.Fatalf("sync with eth0 as the dummy: %v, want ErrNotDummy", err)
	}
	if m := mutations(fake.Ops()); len(m) != 0 {
		t.Errorf("kernel written despite the refusal: %v", m)
	}
}
