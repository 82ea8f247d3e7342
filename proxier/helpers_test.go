package proxier

import (
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

const testNode = "test-node"

func testConfig(mut ...func(*Config)) *Config {
	c := Config{NodeName: testNode, Families: []kernel.Family{kernel.IPv4, kernel.IPv6}}
	for _, m := range mut {
		m(&c)
	}
	c = c.WithDefaults()
	return &c
}

func nodeIPs(ips ...string) func(*Config) {
	return func(c *Config) {
		for _, s := range ips {
			c.NodeIPs = append(c.NodeIPs, netip.MustParseAddr(s))
		}
	}
}

// makeService builds a ClusterIP Service 10.20.30.41 port "p80" 80/TCP, then applies mutators.
func makeService(ns, name string, mut ...func(*v1.Service)) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeClusterIP, ClusterIP: "10.20.30.41", ClusterIPs: []string{"10.20.30.41"},
			Ports: []v1.ServicePort{{Name: "p80", Port: 80, Protocol: v1.ProtocolTCP}},
		},
	}
	for _, m := range mut {
		m(svc)
	}
	return svc
}

func withClusterIPs(ips ...string) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ips[0], ips }
}

func withType(t v1.ServiceType, nodePort int32) func(*v1.Service) {
	return func(s *v1.Service) {
		s.Spec.Type = t
		s.Spec.Ports[0].NodePort = nodePort
	}
}

func withProto(p v1.Protocol) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.Ports[0].Protocol = p }
}

// withPort adds a port after the first.
func withPort(p v1.ServicePort) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.Ports = append(s.Spec.Ports, p) }
}

func withETPLocal(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }

func withITPLocal(s *v1.Service) {
	s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
}

func withLB(ips ...string) func(*v1.Service) {
	return func(s *v1.Service) {
		s.Spec.Type = v1.ServiceTypeLoadBalancer
		if s.Spec.Ports[0].NodePort == 0 {
			s.Spec.Ports[0].NodePort = 3001
		}
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: ip})
		}
	}
}

// ep describes one endpoint for makeSlice.
type ep struct {
	ip                          string
	node                        string
	notReady, terminating, down bool // down: serving=false
	zones                       []string
	nodes                       []string // ForNodes hints (PreferSameNode)
}

func local(ip string) ep  { return ep{ip: ip, node: testNode} }
func remote(ip string) ep { return ep{ip: ip, node: "other-node"} }

// makeSlice builds a slice for svc name with port "p80" 80/TCP (or proto).
func makeSlice(ns, svc, name string, proto v1.Protocol, eps ...ep) *discovery.EndpointSlice {
	fam := discovery.AddressTypeIPv4
	if len(eps) > 0 && strings.Contains(eps[0].ip, ":") {
		fam = discovery.AddressTypeIPv6
	}
	sl := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discovery.LabelServiceName: svc}},
		AddressType: fam,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](80), Protocol: ptr.To(proto)}},
	}
	for _, e := range eps {
		de := discovery.Endpoint{Addresses: []string{e.ip},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(!e.notReady && !e.terminating), Serving: ptr.To(!e.down), Terminating: ptr.To(e.terminating)}}
		if e.node != "" {
			de.NodeName = ptr.To(e.node)
		}
		if len(e.zones) > 0 || len(e.nodes) > 0 {
			de.Hints = &discovery.EndpointHints{}
			for _, z := range e.zones {
				de.Hints.ForZones = append(de.Hints.ForZones, discovery.ForZone{Name: z})
			}
			for _, n := range e.nodes {
				de.Hints.ForNodes = append(de.Hints.ForNodes, discovery.ForNode{Name: n})
			}
		}
		sl.Endpoints = append(sl.Endpoints, de)
	}
	return sl
}

func translate(cfg *Config, svc *v1.Service, slices ...*discovery.EndpointSlice) *ServiceState {
	return Translate(cfg, ServiceKey{Namespace: svc.Namespace, Name: svc.Name}, NewService(svc), slices)
}

// vsMap renders the virtual servers as "TCP 10.0.0.1:80" -> real servers "ip:port" (with
// "/w0" for weight 0), and flags/timeout as a "#flags" key.
func vsMap(st *ServiceState) map[string][]string {
	out := map[string][]string{}
	for _, vs := range st.VirtualServers {
		rs := []string{}
		for r := range vs.RealServers.All() {
			rs = append(rs, r.AddrPort().String())
		}
		out[vs.VSKey.String()] = rs
	}
	return out
}

// members returns the entries of one set, as text, sorted.
func members(st *ServiceState, set string) []string {
	var out []string
	for m := range st.Members.All() {
		if m.Set == set {
			out = append(out, m.Entry.String())
		}
	}
	slices.Sort(out)
	return out
}

func reasons(st *ServiceState) []string {
	var out []string
	for _, p := range st.Problems {
		out = append(out, p.Reason)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
