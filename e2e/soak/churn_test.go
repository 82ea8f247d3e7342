package main

import (
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// loaded is n Services as the workload loads them: every third a NodePort, 4 endpoints.
func loaded(n int) []svcModel {
	out := make([]svcModel, n)
	for i := range out {
		out[i] = svcModel{Exists: true, Type: v1.ServiceTypeClusterIP, Port: 80}
		if i%3 == 1 {
			out[i].Type = v1.ServiceTypeNodePort
		}
		for j := range 4 {
			out[i].Endpoints = append(out[i].Endpoints, epModel{Slot: j, Ready: true, Serving: true})
		}
	}
	return out
}

// TestChurnStaysValid: thousands of drawn changes draw every kind, leave held Services
// alone, and only ever lead to Services the API accepts: externalTrafficPolicy off
// ClusterIP Services, ports 80 or 81, distinct endpoint slots, known schedulers.
func TestChurnStaysValid(t *testing.T) {
	c := newChurner(7, loaded(50))
	c.hold(3)
	before := c.get(3)
	seen := map[string]int{}
	for range 20000 {
		o, ok := c.next()
		if !ok {
			t.Fatal("no change drawn")
		}
		seen[o.Kind]++
		if o.Index < 0 {
			continue
		}
		if c.hold(o.Index) {
			t.Fatalf("held Service %d while its change is written", o.Index)
		}
		c.written()
		if o.Index == 3 {
			t.Fatalf("held Service changed: %+v", o)
		}
		m := o.After
		if m.ETPLocal && m.Type == v1.ServiceTypeClusterIP || m.Port != 80 && m.Port != 81 || len(m.Endpoints) > maxEndpoints ||
			!slices.Contains(schedulers, m.Scheduler) {
			t.Fatalf("invalid state after %s: %+v", o.Kind, m)
		}
		slots := map[int]bool{}
		for _, e := range m.Endpoints {
			if slots[e.Slot] || e.Slot < 0 || e.Slot >= maxEndpoints {
				t.Fatalf("endpoint slots after %s: %+v", o.Kind, m.Endpoints)
			}
			slots[e.Slot] = true
		}
		if !reflect.DeepEqual(c.get(o.Index), m) {
			t.Fatalf("the churner does not hold what it drew")
		}
	}
	for _, w := range append(opWeights, struct {
		kind   string
		weight int
	}{opServiceCreate, 0}) {
		if seen[w.kind] == 0 {
			t.Errorf("never drew %s: %v", w.kind, seen)
		}
	}
	if !reflect.DeepEqual(c.get(3), before) {
		t.Errorf("held Service's state moved")
	}
	c.release(3)
}

// TestModelRoundTrip: a Service and slice made from a model read back as that model.
func TestModelRoundTrip(t *testing.T) {
	m := svcModel{Exists: true, Type: v1.ServiceTypeLoadBalancer, Port: 81, Affinity: true, ETPLocal: true, ITPLocal: true,
		PreferZone: true, Scheduler: "mh", Endpoints: []epModel{{Slot: 0, Ready: true, Serving: true}, {Slot: 5, Serving: true, Terminating: true}, {Slot: 2}}}
	got := modelOf(newService(300, m), sliceOf(300, m, metav1.Now()))
	if !reflect.DeepEqual(got, m) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, m)
	}
}

// TestApplySpecClearsWhatTheTypeForbids: a LoadBalancer with ETP=Local made a
// ClusterIP loses its NodePorts, traffic policy, health check port and NodePort
// allocation; the scheduler annotation is merged into the others.
func TestApplySpecClearsWhatTheTypeForbids(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"keep": "me", annotationScheduler: "sh"}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort: 31000, AllocateLoadBalancerNodePorts: ptr.To(true), Ports: []v1.ServicePort{{Port: 80, NodePort: 30080}}}}
	applySpec(svc, svcModel{Exists: true, Type: v1.ServiceTypeClusterIP, Port: 80, Scheduler: "lc"})
	sp := svc.Spec
	if sp.Ports[0].NodePort != 0 || sp.ExternalTrafficPolicy != "" || sp.HealthCheckNodePort != 0 || sp.AllocateLoadBalancerNodePorts != nil {
		t.Errorf("left what a ClusterIP Service may not have: %+v", sp)
	}
	if svc.Annotations["keep"] != "me" || svc.Annotations[annotationScheduler] != "lc" {
		t.Errorf("annotations %v", svc.Annotations)
	}
	applySpec(svc, svcModel{Exists: true, Type: v1.ServiceTypeNodePort, Port: 81})
	if _, ok := svc.Annotations[annotationScheduler]; ok || svc.Spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyCluster || svc.Spec.Ports[0].Port != 81 {
		t.Errorf("NodePort: %+v %v", svc.Spec, svc.Annotations)
	}
}
