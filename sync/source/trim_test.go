package source

import (
	"bufio"
	"errors"
	"io"
	"net/netip"
	"os"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
)

// TestTrimKeepsTheTranslation: every Service of the test and example clusters, dressed
// as a real cluster stores it (last-applied annotation, owner references, copied labels,
// targetRefs), translates to the same state after trim, and loses the dressing: the
// cached Service is the form of the undressed one.
func TestTrimKeepsTheTranslation(t *testing.T) {
	src := NewStaticSource()
	services := map[proxier.ServiceKey]*v1.Service{} // the source keeps their translation's form
	for _, file := range []string{"../reconcile/testdata/basic.yaml", "../../examples/cluster.yaml", "../../examples/demo.yaml"} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := LoadObjects(f, src, testNode); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		for _, svc := range servicesIn(t, file) {
			services[proxier.ServiceKey{Namespace: svc.Namespace, Name: svc.Name}] = svc
		}
	}
	for _, svc := range oddServices() {
		services[src.SetService(svc)] = svc
	}
	for _, sl := range oddSlices() {
		src.SetSlice(sl)
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
		svc := services[k].DeepCopy()
		if svc == nil {
			continue // slices only
		}
		if svc.Annotations[proxier.AnnotationScheduler] != "" && svc.Annotations[proxier.AnnotationSchedulerFlags] != "" {
			scheduled++
		}
		undressed := proxier.NewService(svc)
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
			trimmed = append(trimmed, c.(*compactSlice).slice())
		}
		c, _ := trim(svc.DeepCopy())
		tsvc := c.(*proxier.Service)
		if !reflect.DeepEqual(tsvc, undressed) {
			t.Errorf("%v: the cached Service is\n%+v\nnot\n%+v", k, tsvc, undressed)
		}
		for i, sl := range trimmed {
			if w, g := sliceView(slices[i]), sliceView(sl); !reflect.DeepEqual(w, g) {
				t.Errorf("%v: the compact slice gives back\n%+v\nnot\n%+v", k, g, w)
			}
		}
		// Both sides read the Service through NewService (the cached form equals the
		// undressed one, above): what this translation compares is the slices' trim.
		want := proxier.Translate(&cfg, k, proxier.NewService(svc), slices)
		if got := proxier.Translate(&cfg, k, tsvc, trimmed); !got.Equal(want) || len(got.Problems) != len(want.Problems) {
			t.Errorf("%v: translation changed by trim", k)
		}
		for _, sl := range trimmed {
			if len(sl.Labels) != 0 || sl.OwnerReferences != nil {
				t.Errorf("%v: slice labels %v", k, sl.Labels)
			}
			for _, e := range sl.Endpoints {
				if e.TargetRef != nil || e.Hostname != nil || e.Zone != nil {
					t.Errorf("%v: endpoint not trimmed", k)
				}
			}
		}
	}
	if got := proxier.Translate(&cfg, proxier.ServiceKey{Namespace: "odd", Name: "lb"}, src.Service(proxier.ServiceKey{Namespace: "odd", Name: "lb"}), nil); len(got.Problems) == 0 {
		t.Error("the odd Services translate without a problem: their bad fields are untested")
	}
	dns, _ := trim(oddServices()[0])
	if l := dns.(*proxier.Service).Label(proxier.LabelK8sApp); l != "kube-dns" {
		t.Errorf("the cluster DNS label is not kept (the critical-Services pass reads it): %q", l)
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
		got = append(got, o.(*compactSlice).slice())
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

// oddServices are Services with what the example clusters lack: every rarely set field
// the translation reads, and bad values it reports (an unknown protocol and policy, a
// clusterIP unlike clusterIPs[0], an invalid address).
func oddServices() []*v1.Service {
	unknownITP := v1.ServiceInternalTrafficPolicy("Sideways")
	return []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "odd", Name: "lb", Labels: map[string]string{"k8s-app": "kube-dns", proxier.LabelServiceProxyName: ""}},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ClusterIP: "10.96.7.1", ClusterIPs: []string{"10.96.7.2", "fd00::7"},
				Ports: []v1.ServicePort{{Name: "a", Protocol: "ICMP", Port: 1}, {Name: "b", Protocol: v1.ProtocolSCTP, Port: 9, NodePort: 30009},
					{Protocol: v1.ProtocolUDP, Port: 70000}},
				ExternalIPs: []string{"192.0.2.7", "not-an-ip"}, LoadBalancerSourceRanges: []string{"198.51.100.0/24", "bad/99"},
				SessionAffinity: v1.ServiceAffinityClientIP, SessionAffinityConfig: &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}},
				ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 31999, InternalTrafficPolicy: &unknownITP},
			Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "203.0.113.7"},
				{IP: "203.0.113.8", IPMode: ptr.To(v1.LoadBalancerIPModeProxy)}, {Hostname: "lb.example"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "odd", Name: "local", Annotations: map[string]string{proxier.AnnotationScheduler: "sh", proxier.KubeRouterAnnotationSchedulerFlags: "flag-2"}},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIP: "10.96.7.3", ClusterIPs: []string{"10.96.7.3"},
				Ports:                 []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}},
				InternalTrafficPolicy: ptr.To(v1.ServiceInternalTrafficPolicyLocal), ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal}},
	}
}

// oddSlices are slices of the odd Services with endpoints the example clusters lack: no
// address, an empty and an invalid one, two addresses, unset and false conditions,
// hints, a port without a number, name or protocol.
func oddSlices() []*discovery.EndpointSlice {
	eps := []discovery.Endpoint{
		{Addresses: []string{"10.1.0.1", "10.1.0.99"}, NodeName: ptr.To(testNode), Hints: &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: "z"}}}},
		{Addresses: nil, Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}},
		{Addresses: []string{""}, Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}},
		{Addresses: []string{"10.1.0.300"}},
		{Addresses: []string{"10.1.0.2"}, Conditions: discovery.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}, NodeName: ptr.To(testNode)},
		{Addresses: []string{"fd00::1"}, Conditions: discovery.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false)}},
	}
	ports := []discovery.EndpointPort{{Name: ptr.To("a"), Protocol: ptr.To(v1.Protocol("ICMP")), Port: ptr.To[int32](1)},
		{Name: ptr.To("b"), Protocol: ptr.To(v1.ProtocolSCTP), Port: ptr.To[int32](9)}, {Protocol: ptr.To(v1.ProtocolUDP)},
		{Name: ptr.To("http"), Port: ptr.To[int32](8080)}, {Name: ptr.To("zero"), Port: ptr.To[int32](0)}}
	var out []*discovery.EndpointSlice
	for _, svc := range []string{"lb", "local"} {
		out = append(out, &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "odd", Name: svc + "-x",
			Labels: map[string]string{discovery.LabelServiceName: svc}}, AddressType: discovery.AddressTypeIPv4, Endpoints: eps, Ports: ports})
	}
	return out
}

// servicesIn returns the Services of a file of YAML documents, as LoadObjects decodes
// them.
func servicesIn(t *testing.T, file string) []*v1.Service {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*v1.Service
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		raw, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatal(err)
		}
		if obj, _, err := kubeapi.Codecs.UniversalDeserializer().Decode(raw, nil, nil); err == nil {
			if svc, ok := obj.(*v1.Service); ok {
				out = append(out, svc)
			}
		}
	}
}

// sliceView is what the translation reads of an EndpointSlice (proxier/endpoints.go):
// per endpoint the first address only, no label (the slice's Service is the key it is
// read under).
func sliceView(sl *discovery.EndpointSlice) discovery.EndpointSlice {
	v := discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: sl.Namespace, Name: sl.Name}, AddressType: sl.AddressType}
	for _, e := range sl.Endpoints {
		ve := discovery.Endpoint{Conditions: e.Conditions, NodeName: e.NodeName, Hints: e.Hints}
		if len(e.Addresses) > 0 {
			ve.Addresses = e.Addresses[:1]
		}
		v.Endpoints = append(v.Endpoints, ve)
	}
	for _, p := range sl.Ports {
		v.Ports = append(v.Ports, discovery.EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: p.Port})
	}
	return v
}
