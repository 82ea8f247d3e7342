package harness

import (
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// ClusterState is a random but API-valid set of Services and their EndpointSlices, for
// the differential test against stock kube-proxy. LBIngress holds the status each
// LoadBalancer Service gets once created (the API sets status apart from spec).
type ClusterState struct {
	Seed      uint64
	Services  []*v1.Service
	Slices    []*discovery.EndpointSlice
	LBIngress map[string][]v1.LoadBalancerIngress
}

// RandomClusterState draws n Services of every type, protocol and policy from seed:
// named and numeric target ports, external IPs, session affinity, ETP/ITP, LoadBalancer
// ingress with ipMode and source ranges, endpoints with every combination of conditions
// on node-1, node-2 and no node, zone hints, and Services split over two slices. Every
// external and load-balancer IP is distinct: two Services on one VIP:port is a
// deliberate difference of its own (VirtualServerConflict), tested apart.
func RandomClusterState(seed uint64, n int, prefix string) *ClusterState {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cs := &ClusterState{Seed: seed, LBIngress: map[string][]v1.LoadBalancerIngress{}}
	nextVIP := 10
	vip := func() string { nextVIP++; return fmt.Sprintf("198.51.100.%d", nextVIP) }
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		sp := &svc.Spec
		sp.Type = []v1.ServiceType{v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort, v1.ServiceTypeLoadBalancer}[r.IntN(3)]
		if sp.Type != v1.ServiceTypeClusterIP && r.IntN(2) == 0 {
			sp.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		}
		if r.IntN(4) == 0 {
			sp.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
		}
		if r.IntN(4) == 0 {
			sp.SessionAffinity = v1.ServiceAffinityClientIP
			if r.IntN(2) == 0 {
				sp.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To(int32(60 + r.IntN(3600)))}}
			}
		}
		if r.IntN(4) == 0 {
			sp.ExternalIPs = []string{vip()}
		}
		nports := 1 + r.IntN(2)
		protos := []v1.Protocol{v1.ProtocolTCP, v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}
		for j := range nports {
			p := v1.ServicePort{Name: fmt.Sprintf("p%d", j), Port: int32(80 + j*1000 + r.IntN(5)), Protocol: protos[r.IntN(len(protos))]}
			if r.IntN(2) == 0 {
				p.TargetPort = intstr.FromString("named") // the slice's port carries the number
			} else {
				p.TargetPort = intstr.FromInt32(int32(8000 + r.IntN(3)))
			}
			sp.Ports = append(sp.Ports, p)
		}
		if sp.Type == v1.ServiceTypeLoadBalancer {
			if r.IntN(2) == 0 {
				sp.LoadBalancerSourceRanges = [][]string{{"192.168.50.0/24"}, {"10.0.0.0/8", "192.168.50.2/32"}, {"192.168.0.0/16", "::/0"}}[r.IntN(3)]
			}
			ing := v1.LoadBalancerIngress{IP: vip()}
			if r.IntN(4) == 0 {
				ing.IPMode = ptr.To(v1.LoadBalancerIPModeProxy)
			}
			cs.LBIngress[name] = []v1.LoadBalancerIngress{ing}
		}
		cs.Services = append(cs.Services, svc)
		cs.Slices = append(cs.Slices, randomSlices(r, svc)...)
	}
	return cs
}

// randomSlices makes zero, one or two slices of up to four endpoints each.
func randomSlices(r *rand.Rand, svc *v1.Service) []*discovery.EndpointSlice {
	var out []*discovery.EndpointSlice
	hints := r.IntN(4) == 0 // then every endpoint has a zone hint
	for k := range r.IntN(3) {
		sl := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: fmt.Sprintf("%s-%d", svc.Name, k+1),
			Labels: map[string]string{discovery.LabelServiceName: svc.Name}}, AddressType: discovery.AddressTypeIPv4}
		for _, p := range svc.Spec.Ports {
			sl.Ports = append(sl.Ports, discovery.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(int32(8000 + r.IntN(3))), Protocol: ptr.To(p.Protocol)})
		}
		for range 1 + r.IntN(4) {
			e := discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.%d", r.IntN(2), 100+r.IntN(100))}}
			if n := r.IntN(3); n < 2 {
				e.NodeName = ptr.To(fmt.Sprintf("node-%d", n+1))
			}
			// Every combination of the three conditions, nil (= true for ready and
			// serving) included.
			cond := func() *bool { return []*bool{nil, ptr.To(true), ptr.To(false)}[r.IntN(3)] }
			e.Conditions = discovery.EndpointConditions{Ready: cond(), Serving: cond(), Terminating: cond()}
			if hints {
				e.Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: []string{"zone-a", "zone-b"}[r.IntN(2)]}}}
			}
			sl.Endpoints = append(sl.Endpoints, e)
		}
		out = append(out, sl)
	}
	return out
}

// ITPLocalFallback reports whether Service name has internalTrafficPolicy Local, is
// reachable from outside (NodePort, LoadBalancer or an external IP) and has no ready
// endpoint on node: where kube-proxy's IPVS mode gives its ClusterIP the remote
// endpoints and ipvs-proxier none (docs/differences.md).
func (cs *ClusterState) ITPLocalFallback(name, node string) bool {
	var svc *v1.Service
	for _, s := range cs.Services {
		if s.Name == name {
			svc = s
		}
	}
	if svc == nil || svc.Spec.InternalTrafficPolicy == nil || *svc.Spec.InternalTrafficPolicy != v1.ServiceInternalTrafficPolicyLocal ||
		svc.Spec.Type == v1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) == 0 {
		return false
	}
	for _, sl := range cs.Slices {
		if sl.Labels[discovery.LabelServiceName] != name {
			continue
		}
		for _, e := range sl.Endpoints {
			if e.NodeName != nil && *e.NodeName == node && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				return false
			}
		}
	}
	return true
}

// Hinted reports whether Service name's endpoints carry zone hints. kube-proxy filters
// them by its Node's zone label only once it has applied that label, and in one run
// (seed 2) it had not when its state settled: the differential does not compare the
// real servers of such Services.
func (cs *ClusterState) Hinted(name string) bool {
	for _, sl := range cs.Slices {
		if sl.Labels[discovery.LabelServiceName] == name && len(sl.Endpoints) > 0 && sl.Endpoints[0].Hints != nil {
			return true
		}
	}
	return false
}
