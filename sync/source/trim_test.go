package source

import (
	"net/netip"
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestTrimKeepsTheTranslation: every Service of the test and example clusters, dressed
// as a real cluster stores it (last-applied annotation, owner references, copied labels,
// targetRefs), translates to the same state after trim, and loses the dressing.
func TestTrimKeepsTheTranslation(t *testing.T) {
	src := NewStaticSource()
	for _, file := range []string{"../reconcile/testdata/basic.yaml", "../../examples/cluster.yaml", "../../examples/demo.yaml"} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := LoadObjects(f, src, testNode); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	cfg := proxier.Config{NodeName: testNode, NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.1.10")},
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}.WithDefaults()
	keys := src.ServiceKeys()
	if len(keys) < 5 {
		t.Fatalf("only %d Services loaded", len(keys))
	}
	// dress adds to what the object has: replacing its annotations would delete the
	// scheduler annotations before both translations, and a trim that drops them would pass.
	dress := func(m *metav1.ObjectMeta) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"big":"copy"}`
		for k, v := range map[string]string{"app": "x", "team": "y"} {
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[k] = v
		}
		m.OwnerReferences = []metav1.OwnerReference{{Kind: "Service", Name: m.Name}}
		m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	}
	scheduled := 0
	for _, k := range keys {
		svc := src.Service(k).DeepCopy()
		if svc.Annotations[proxier.AnnotationScheduler] != "" && svc.Annotations[proxier.AnnotationSchedulerFlags] != "" {
			scheduled++
		}
		dress(&svc.ObjectMeta)
		svc.Spec.Selector = map[string]string{"app": "x"}
		var slices, trimmed []*discovery.EndpointSlice
		for _, sl := range src.Slices(k) {
			sl = sl.DeepCopy()
			dress(&sl.ObjectMeta)
			for i := range sl.Endpoints {
				sl.Endpoints[i].TargetRef = &v1.ObjectReference{Kind: "Pod", Name: "pod"}
				sl.Endpoints[i].Hostname = ptr.To("h")
				sl.Endpoints[i].Zone = ptr.To("zone-a")
			}
			slices = append(slices, sl)
			c, _ := trim(sl.DeepCopy())
			trimmed = append(trimmed, c.(*discovery.EndpointSlice))
		}
		c, _ := trim(svc.DeepCopy())
		tsvc := c.(*v1.Service)
		want := proxier.Translate(&cfg, k, svc, slices)
		if got := proxier.Translate(&cfg, k, tsvc, trimmed); !got.Equal(want) || len(got.Problems) != len(want.Problems) {
			t.Errorf("%v: translation changed by trim", k)
		}
		for a := range tsvc.Annotations { // only what the translation reads is kept
			if a != proxier.AnnotationScheduler && a != proxier.AnnotationSchedulerFlags {
				t.Errorf("%v: Service keeps annotation %q", k, a)
			}
		}
		if tsvc.OwnerReferences != nil || tsvc.Labels["app"] != "" || tsvc.Spec.Selector != nil {
			t.Errorf("%v: Service not trimmed: %v %v", k, tsvc.Annotations, tsvc.Labels)
		}
		for _, sl := range trimmed {
			if sl.Labels[discovery.LabelServiceName] == "" || len(sl.Labels) > 2 || sl.OwnerReferences != nil {
				t.Errorf("%v: slice labels %v", k, sl.Labels)
			}
			for _, e := range sl.Endpoints {
				if e.TargetRef != nil || e.Hostname != nil || e.Zone != nil {
					t.Errorf("%v: endpoint not trimmed", k)
				}
			}
		}
	}
	if scheduled == 0 {
		t.Error("no Service carries both scheduler annotations: trim's keeping them is untested")
	}
}

// TestTrimSharesEndpointValues: equal node names, conditions, port names and protocols
// of different slices end up as one shared pointer each, with their values unchanged.
func TestTrimSharesEndpointValues(t *testing.T) {
	mk := func(node string, ready bool) *discovery.EndpointSlice {
		return &discovery.EndpointSlice{Ports: []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolUDP), Port: ptr.To[int32](53)}},
			Endpoints: []discovery.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To(node),
				Conditions: discovery.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(true)}}}}
	}
	var got []*discovery.EndpointSlice
	for _, sl := range []*discovery.EndpointSlice{mk("node-a", true), mk("node-a", true), mk("node-b", false)} {
		o, _ := trim(sl)
		got = append(got, o.(*discovery.EndpointSlice))
	}
	a, b, c := got[0].Endpoints[0], got[1].Endpoints[0], got[2].Endpoints[0]
	if a.NodeName != b.NodeName || a.Conditions.Ready != b.Conditions.Ready || a.Conditions.Serving != c.Conditions.Serving {
		t.Error("equal values of two slices are not shared")
	}
	if *a.NodeName != "node-a" || *c.NodeName != "node-b" || !*a.Conditions.Ready || *c.Conditions.Ready || c.Conditions.Terminating != nil {
		t.Errorf("values changed: %q %q %v %v %v", *a.NodeName, *c.NodeName, *a.Conditions.Ready, *c.Conditions.Ready, c.Conditions.Terminating)
	}
	p, q := got[0].Ports[0], got[2].Ports[0]
	if p.Name != q.Name || p.Protocol != q.Protocol || *p.Name != "http" || *p.Protocol != v1.ProtocolUDP || *p.Port != 53 {
		t.Errorf("ports not shared or changed: %v %v", p, q)
	}
}
