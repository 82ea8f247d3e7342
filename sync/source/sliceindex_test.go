package source

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi/kubeapitest"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestInformerSlicesFollowEvents: through real informers (over a fake clientset), the
// source's slices by Service follow adds, a slice moving to another Service, and
// deletes; what it gives back is the slice as stored, and ServiceKeys names the Services
// of slices without a Service object.
func TestInformerSlicesFollowEvents(t *testing.T) {
	mk := func(name, svc, addr string) *discovery.EndpointSlice {
		return &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{discovery.LabelServiceName: svc}}, AddressType: discovery.AddressTypeIPv4,
			Ports: []discovery.EndpointPort{{Name: ptr.To("p"), Port: ptr.To[int32](80), Protocol: ptr.To(v1.ProtocolTCP)}},
			Endpoints: []discovery.Endpoint{{Addresses: []string{addr}, NodeName: ptr.To("node-1"),
				Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}}}}
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, Ports: []v1.ServicePort{{Name: "p", Port: 80, Protocol: v1.ProtocolTCP}}}}
	client := fake.NewClientset(svc, mk("a-1", "a", "10.0.0.1"), mk("a-2", "a", "10.0.0.2"))
	src := NewInformerSource(kubeapitest.Clientset{Interface: client}, "node-1", 0, NewTracker(func() {}), nil)
	stop := make(chan struct{})
	defer close(stop)
	src.Start(stop)
	a, b := proxier.ServiceKey{Namespace: "ns", Name: "a"}, proxier.ServiceKey{Namespace: "ns", Name: "b"}
	names := func(k proxier.ServiceKey) []string {
		var out []string
		for _, sl := range src.Slices(k) {
			out = append(out, sl.Name+"="+sl.Endpoints[0].Addresses[0])
		}
		return out
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: a %v, b %v, keys %v", what, names(a), names(b), src.ServiceKeys())
			}
		}
	}
	wait("synced", src.HasSynced)
	if got := names(a); !slices.Equal(got, []string{"a-1=10.0.0.1", "a-2=10.0.0.2"}) {
		t.Errorf("after the initial list: %v", got)
	}
	s, w := src.Service(a), svc.DeepCopy()
	if s != nil {
		w.ResourceVersion = s.GetResourceVersion() // the fake clientset's
	}
	if s == nil || !reflect.DeepEqual(s, proxier.NewService(w)) {
		t.Errorf("Service: %+v, want the form of %+v", s, w)
	}
	ctx := context.Background()
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, mk("a-2", "b", "10.0.0.3"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("a-2 moved to b", func() bool {
		return slices.Equal(names(a), []string{"a-1=10.0.0.1"}) && slices.Equal(names(b), []string{"a-2=10.0.0.3"})
	})
	if keys := src.ServiceKeys(); !slices.Contains(keys, b) || len(keys) != 2 {
		t.Errorf("ServiceKeys %v, want a and b (b has slices only)", keys)
	}
	if err := client.DiscoveryV1().EndpointSlices("ns").Delete(ctx, "a-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("a-1 deleted", func() bool { return len(names(a)) == 0 && len(names(b)) == 1 })
}
