package source

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestResyncIsNoChange: an update that delivers a Service or slice again with the same
// resourceVersion (an informer's resync or relist) records no change; one with a new
// resourceVersion does.
func TestResyncIsNoChange(t *testing.T) {
	tracker := NewTracker(func() {})
	h := changeHandler(tracker, nil, newSliceIndex(), nil)
	svc := func(rv string) any {
		return proxier.NewService(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}})
	}
	slice := func(rv string) any {
		return packSlice(&discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-1", ResourceVersion: rv,
			Labels: map[string]string{discovery.LabelServiceName: "a"}}, AddressType: discovery.AddressTypeIPv4})
	}
	h.OnAdd(slice("7"), false)
	tracker.Drain()
	h.OnUpdate(svc("5"), svc("5"))
	h.OnUpdate(slice("7"), slice("7"))
	if n := tracker.Pending(); n != 0 {
		t.Errorf("%d changes pending after a resync, want 0", n)
	}
	h.OnUpdate(svc("5"), svc("6"))
	h.OnUpdate(slice("7"), slice("8"))
	if s, e := tracker.PendingByKind(); s != 1 || e != 1 {
		t.Errorf("%d Service and %d endpoint changes pending after updates, want 1 and 1", s, e)
	}
}
