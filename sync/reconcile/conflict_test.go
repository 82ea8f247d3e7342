package reconcile

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestConflictEventOnTheLoser: two Services on one external IP:port. The loser gets
// one VirtualServerConflict Warning naming the winner, however many syncs; the
// kernel's KUBE-NO-ENDPOINTS never holds the VIP:port the winner serves.
func TestConflictEventOnTheLoser(t *testing.T) {
	sink := &recordingSink{}
	fake := kernel.NewFake()
	h := newHarness(t, kernel.Kernel{}, fake, func(o *Options) { o.Events = sink })
	a := svc("ns", "a", "10.96.5.1", 80, v1.ProtocolTCP)
	a.Spec.ExternalIPs = []string{"50.60.70.81"}
	b := svc("ns", "b", "10.96.5.2", 80, v1.ProtocolTCP)
	b.Spec.ExternalIPs = []string{"50.60.70.81"}
	h.src.SetService(b) // the loser first: the winner's arrival demotes it
	h.src.SetSlice(slice("ns", "b", "b-1", 8080, v1.ProtocolTCP))
	h.tracker.AllChanged()
	h.mustSync(t)
	h.src.SetService(a)
	h.src.SetSlice(slice("ns", "a", "a-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "a"})
	for range 3 {
		h.mustSync(t)
	}
	h.tracker.AllChanged()
	h.mustSync(t) // a full sync: still one event
	if len(sink.got) != 1 || sink.got[0].Reason != "VirtualServerConflict" || sink.got[0].Name != "b" ||
		!strings.Contains(sink.got[0].Message, "ns/a") {
		t.Errorf("events %v, want one VirtualServerConflict on b naming ns/a", sink.got)
	}
	if dump := fake.Dump(); strings.Contains(dump, "add KUBE-NO-ENDPOINTS 50.60.70.81,tcp:80") || !strings.Contains(dump, "-> 10.244.0.1:8080") {
		t.Errorf("kernel:\n%s", dump)
	}
}
