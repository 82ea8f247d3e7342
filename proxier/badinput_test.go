package proxier

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestTranslateBadInput: malformed objects never panic; the bad part is skipped and
// named in a Problem, and the good parts are still programmed.
func TestTranslateBadInput(t *testing.T) {
	tcp := v1.ProtocolTCP
	good := makeSlice("ns", "s", "s1", tcp, ep{ip: "10.180.0.1"})
	runTranslateCases(t, []translateCase{{
		name:   "unparseable cluster IP",
		svc:    makeService("ns", "s", withClusterIPs("10.20.30.400")),
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{},
		probs:  []string{"InvalidClusterIP"},
	}, {
		name:   "port 0 skipped, other port kept",
		svc:    makeService("ns", "s", withPort(v1.ServicePort{Name: "zero", Port: 0})),
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}},
		probs:  []string{"InvalidPort"},
	}, {
		name:   "unknown protocol",
		svc:    makeService("ns", "s", withPort(v1.ServicePort{Name: "x", Port: 81, Protocol: "ICMP"})),
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}},
		probs:  []string{"UnsupportedProtocol"},
	}, {
		name:   "duplicate ports",
		svc:    makeService("ns", "s", withPort(v1.ServicePort{Name: "again", Port: 80, Protocol: v1.ProtocolTCP})),
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}},
		probs:  []string{"DuplicatePort"},
	}, {
		// A file may omit the protocol the API would default to TCP: still a duplicate.
		name:   "duplicate ports, one without a protocol",
		svc:    makeService("ns", "s", withPort(v1.ServicePort{Name: "again", Port: 80})),
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}},
		probs:  []string{"DuplicatePort"},
	}, {
		// Found by FuzzPlan: one virtual server of two ports, the KUBE-NO-ENDPOINTS entry
		// of the one without endpoints rejecting the other's traffic.
		name:   "two ports on one nodePort: the second gets none",
		svc:    makeService("ns", "s", withType(v1.ServiceTypeNodePort, 30081), withPort(v1.ServicePort{Name: "other", Port: 443, NodePort: 30081})),
		cfg:    []func(*Config){nodeIPs("192.168.0.10")},
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 10.20.30.41:443": {}, "TCP 192.168.0.10:30081": {"10.180.0.1:80"}},
		probs:  []string{"DuplicateNodePort"},
	}, {
		name:   "endpoint of the wrong family in a slice",
		svc:    makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp, ep{ip: "10.180.0.1"}, ep{ip: "fd00::1"}, ep{ip: "not-an-ip"})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}},
		probs:  []string{"InvalidEndpointAddress"},
	}, {
		name: "bad external IP and source range",
		svc: makeService("ns", "s", withLB("1.2.3.4"), func(s *v1.Service) {
			s.Spec.ExternalIPs = []string{"1.2.3"}
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/33"}
		}),
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 1.2.3.4:80": {"10.180.0.1:80"}},
		probs:  []string{"InvalidExternalIP", "InvalidSourceRange"},
	}, {
		// Bound to kube-ipvs0, 127.0.0.1:80 would capture the node's own localhost.
		name: "special external and load-balancer IPs are never programmed",
		svc: makeService("ns", "s", withLB("127.0.0.1", "0.0.0.0", "5.6.7.8"), func(s *v1.Service) {
			s.Spec.ExternalIPs = []string{"0.0.0.0", "127.0.0.1", "224.0.0.1", "255.255.255.255", "169.254.169.254", "10.20.30.41", "1.2.3.4"}
		}),
		slices: []*discovery.EndpointSlice{good},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 1.2.3.4:80": {"10.180.0.1:80"},
			"TCP 5.6.7.8:80": {"10.180.0.1:80"}},
		probs: []string{"InvalidExternalIP", "InvalidLoadBalancerIP"},
	}, {
		name:   "bad external IP on an IPv6-only service is still reported",
		svc:    makeService("ns", "s", withClusterIPs("fd00::41"), func(s *v1.Service) { s.Spec.ExternalIPs = []string{"nope"} }),
		wantVS: map[string][]string{"TCP [fd00::41]:80": {}},
		probs:  []string{"InvalidExternalIP"},
	}, {
		name: "slice ports with nil port or port 0 are ignored",
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{func() *discovery.EndpointSlice {
			s := makeSlice("ns", "s", "s1", tcp, ep{ip: "10.180.0.1"})
			s.Ports = []discovery.EndpointPort{{Name: ptr.To("p80")}, {Name: ptr.To("p80"), Port: ptr.To[int32](0)}}
			return s
		}(), nil},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {}},
	}, {
		name: "affinity timeout out of range",
		svc: makeService("ns", "s", func(s *v1.Service) {
			s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](-5)}}
		}),
		slices:  []*discovery.EndpointSlice{good},
		flags:   1,
		timeout: DefaultAffinityTimeout,
		probs:   []string{"InvalidSessionAffinity"},
	}})
}

// TestTranslateHugeService: 5,000 endpoints are all programmed; above MaxEndpoints the
// list is cut, with a problem.
func TestTranslateHugeService(t *testing.T) {
	var eps []ep
	for i := range 5000 {
		eps = append(eps, ep{ip: fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256)})
	}
	svc := makeService("ns", "s")
	sl := makeSlice("ns", "s", "s1", v1.ProtocolTCP, eps...)
	st := translate(testConfig(), svc, sl)
	if n := st.VirtualServers[0].RealServers.Len(); n != 5000 {
		t.Fatalf("got %d real servers, want 5000", n)
	}
	if len(st.Problems) != 0 {
		t.Errorf("unexpected problems %v", st.Problems)
	}
	st = translate(testConfig(func(c *Config) { c.MaxEndpoints = 1000 }), svc, sl)
	if n := st.VirtualServers[0].RealServers.Len(); n != 1000 {
		t.Fatalf("got %d real servers, want 1000", n)
	}
	if !slices.Equal(reasons(st), []string{"TooManyEndpoints"}) {
		t.Errorf("problems %v", st.Problems)
	}
}

// TestHealthCheck: the healthCheckNodePort of an ETP=Local LB counts distinct local
// ready endpoint IPs; terminating ones do not count.
func TestHealthCheck(t *testing.T) {
	hc := func(s *v1.Service) { s.Spec.HealthCheckNodePort = 30000 }
	cases := []struct {
		name string
		svc  *v1.Service
		eps  []ep
		want *HealthCheck
	}{
		{"ETP=Local LB", makeService("ns", "s", withLB("1.2.3.4"), withETPLocal, hc), []ep{local("10.0.0.1"), local("10.0.0.2"), remote("10.0.0.3")}, &HealthCheck{Port: 30000, LocalEndpoints: 2}},
		{"terminating endpoints do not count", makeService("ns", "s", withLB("1.2.3.4"), withETPLocal, hc),
			[]ep{{ip: "10.0.0.1", node: testNode, terminating: true}, {ip: "10.0.0.2", node: testNode, terminating: true}}, &HealthCheck{Port: 30000, LocalEndpoints: 0}},
		{"ETP=Cluster never gets one", makeService("ns", "s", withLB("1.2.3.4"), hc), []ep{local("10.0.0.1")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := translate(testConfig(), tc.svc, makeSlice("ns", "s", "s1", v1.ProtocolTCP, tc.eps...))
			if (st.HealthCheck == nil) != (tc.want == nil) || st.HealthCheck != nil && *st.HealthCheck != *tc.want {
				t.Errorf("health check %+v, want %+v", st.HealthCheck, tc.want)
			}
			wantSet := []string(nil)
			if tc.want != nil {
				wantSet = []string{"30000"}
			}
			if got := members(st, "KUBE-HEALTH-CHECK-NODE-PORT"); !slices.Equal(got, wantSet) {
				t.Errorf("KUBE-HEALTH-CHECK-NODE-PORT %v, want %v", got, wantSet)
			}
		})
	}
}

// TestNoLocalEndpointCounters mirrors kube-proxy's no_local_endpoints metric: per family,
// a Service counts once (not once per port) when it has endpoints but none local under a
// Local policy (pkg/proxy/ipvs/proxier.go, serviceNoLocalEndpointsInternal/External).
func TestNoLocalEndpointCounters(t *testing.T) {
	remoteOnly := makeSlice("ns", "s", "s1", v1.ProtocolTCP, remote("10.0.0.1"), remote("10.0.0.2"))
	withLocal := makeSlice("ns", "s", "s1", v1.ProtocolTCP, local("10.0.0.1"), remote("10.0.0.2"))
	remote6 := makeSlice("ns", "s", "s6", v1.ProtocolTCP, remote("fd00::1"))
	twoPorts := withPort(v1.ServicePort{Name: "p81", Port: 81, Protocol: v1.ProtocolTCP, NodePort: 3002})
	dual := withClusterIPs("10.20.30.41", "fd00:20::41")
	v4, v6, both := [2]bool{true, false}, [2]bool{false, true}, [2]bool{true, true}
	cases := []struct {
		name     string
		svc      *v1.Service
		sls      []*discovery.EndpointSlice
		int, ext [2]bool
	}{
		{"ITP=Local, no local", makeService("ns", "s", withITPLocal), sl(remoteOnly), v4, [2]bool{}},
		{"ITP=Local, local", makeService("ns", "s", withITPLocal), sl(withLocal), [2]bool{}, [2]bool{}},
		{"ETP=Local, no local", makeService("ns", "s", withType(v1.ServiceTypeNodePort, 3001), withETPLocal), sl(remoteOnly), [2]bool{}, v4},
		{"ETP=Local, no endpoints at all", makeService("ns", "s", withType(v1.ServiceTypeNodePort, 3001), withETPLocal), nil, [2]bool{}, [2]bool{}},
		{"both policies, two ports", makeService("ns", "s", withType(v1.ServiceTypeNodePort, 3001), withETPLocal, withITPLocal, twoPorts), sl(remoteOnly), v4, v4},
		{"dual-stack, IPv6 endpoints only", makeService("ns", "s", withType(v1.ServiceTypeNodePort, 3001), withETPLocal, dual), sl(remote6), [2]bool{}, v6},
		{"dual-stack, both families", makeService("ns", "s", withType(v1.ServiceTypeNodePort, 3001), withETPLocal, dual), sl(remoteOnly, remote6), [2]bool{}, both},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := translate(testConfig(), tc.svc, tc.sls...)
			if st.NoLocalInternal != tc.int || st.NoLocalExternal != tc.ext {
				t.Errorf("internal %v external %v, want %v %v", st.NoLocalInternal, st.NoLocalExternal, tc.int, tc.ext)
			}
		})
	}
	// Desired counts Services per family, and forgets one that goes away.
	d := NewDesired()
	a := translate(testConfig(), makeService("ns", "a", withType(v1.ServiceTypeNodePort, 3001), withETPLocal, withITPLocal, twoPorts), remoteOnly)
	b := translate(testConfig(), makeService("ns", "b", withType(v1.ServiceTypeNodePort, 3003), withETPLocal, dual), remoteOnly, remote6)
	d.Set(a, nil)
	d.Set(b, nil)
	if in, ex := d.NoLocal(kernel.IPv4); in != 1 || ex != 2 {
		t.Errorf("IPv4: internal %d external %d, want 1 2", in, ex)
	}
	if in, ex := d.NoLocal(kernel.IPv6); in != 0 || ex != 1 {
		t.Errorf("IPv6: internal %d external %d, want 0 1", in, ex)
	}
	d.Set(&ServiceState{Key: b.Key}, nil)
	if in, ex := d.NoLocal(kernel.IPv6); in != 0 || ex != 0 {
		t.Errorf("IPv6 after b left: internal %d external %d", in, ex)
	}
}

func sl(s ...*discovery.EndpointSlice) []*discovery.EndpointSlice { return s }
