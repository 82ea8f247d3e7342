package proxier

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestAllocatedClaimWins: a Service that names another Service's allocated address (its
// ClusterIP, or a node IP on its NodePort) as an external IP or load-balancer ingress
// never takes it, whichever Service sorts first and whichever arrives first; the
// Warning goes on the one that named it (CVE-2020-8554 is this class).
func TestAllocatedClaimWins(t *testing.T) {
	cfg := testConfig(nodeIPs("192.168.0.10"))
	epsOf := func(ns, name, ip string, proto v1.Protocol) *discovery.EndpointSlice {
		return makeSlice(ns, name, name+"-1", proto, remote(ip))
	}
	https := func(s *v1.Service) { s.Spec.Ports[0].Port = 443 }
	dns := func(s *v1.Service) { s.Spec.Ports[0].Port = 53; s.Spec.Ports[0].Protocol = v1.ProtocolUDP }
	cases := []struct {
		name             string
		victim, attacker *ServiceState
		vs               kernel.VSKey
		victimRS         string
	}{{
		name:     "external IP on the kubernetes Service's ClusterIP",
		victim:   translate(cfg, makeService("default", "kubernetes", https, withClusterIPs("10.96.0.1")), epsOf("default", "kubernetes", "10.0.0.1", v1.ProtocolTCP)),
		attacker: translate(cfg, makeService("aaa", "evil", https, withClusterIPs("10.96.0.99"), func(s *v1.Service) { s.Spec.ExternalIPs = []string{"10.96.0.1"} }), epsOf("aaa", "evil", "10.0.9.9", v1.ProtocolTCP)),
		vs:       kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 443},
		victimRS: "10.0.0.1:80",
	}, {
		name:     "LB ingress on kube-dns's ClusterIP",
		victim:   translate(cfg, makeService("kube-system", "kube-dns", dns, withClusterIPs("10.96.0.10")), epsOf("kube-system", "kube-dns", "10.0.0.53", v1.ProtocolUDP)),
		attacker: translate(cfg, makeService("aaa", "evil", dns, withClusterIPs("10.96.0.99"), withType(v1.ServiceTypeLoadBalancer, 31000), withLB("10.96.0.10")), epsOf("aaa", "evil", "10.0.9.9", v1.ProtocolUDP)),
		vs:       kernel.VSKey{Protocol: kernel.UDP, Address: netip.MustParseAddr("10.96.0.10"), Port: 53},
		victimRS: "10.0.0.53:80",
	}, {
		name:   "external IP on a node IP and another team's NodePort",
		victim: translate(cfg, makeService("team", "web", withType(v1.ServiceTypeNodePort, 30080)), epsOf("team", "web", "10.0.0.80", v1.ProtocolTCP)),
		attacker: translate(cfg, makeService("aaa", "evil", withClusterIPs("10.96.0.99"), func(s *v1.Service) {
			s.Spec.Ports[0].Port = 30080
			s.Spec.ExternalIPs = []string{"192.168.0.10"}
		}), epsOf("aaa", "evil", "10.0.9.9", v1.ProtocolTCP)),
		vs:       kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("192.168.0.10"), Port: 30080},
		victimRS: "10.0.0.80:80",
	}}
	for _, tc := range cases {
		for _, order := range [][]*ServiceState{{tc.victim, tc.attacker}, {tc.attacker, tc.victim}} {
			t.Run(tc.name+"/"+order[0].Key.Name+" first", func(t *testing.T) {
				des := NewDesired()
				for _, st := range order {
					des.Set(st, NewDelta())
				}
				checkInvariants(t, des)
				vs, owner, ok := des.VirtualServer(tc.vs)
				if !ok || owner != tc.victim.Key {
					t.Fatalf("%s is programmed for %v, want the victim %v", tc.vs, owner, tc.victim.Key)
				}
				var rs []string
				for r := range vs.RealServers.All() {
					rs = append(rs, r.AddrPort().String())
				}
				if !slices.Equal(rs, []string{tc.victimRS}) {
					t.Errorf("%s forwards to %v, want the victim's %s", tc.vs, rs, tc.victimRS)
				}
				if p := des.Conflicts(tc.victim.Key); len(p) != 0 {
					t.Errorf("the victim got a Warning: %v", p)
				}
				p := des.Conflicts(tc.attacker.Key)
				if len(p) != 1 || p[0].Reason != "VirtualServerConflict" || !strings.Contains(p[0].Message, tc.victim.Key.String()) ||
					!strings.Contains(p[0].Message, "allocated") {
					t.Errorf("attacker's Problems %v, want one VirtualServerConflict naming %v as allocated", p, tc.victim.Key)
				}
			})
		}
	}
}

// TestSpecialEndpointAddresses: endpoints the API's validation refuses (CVE-2021-25737)
// never become real servers; the slice gets an InvalidEndpointAddress Problem and the
// Service's other endpoints stay.
func TestSpecialEndpointAddresses(t *testing.T) {
	cfg := testConfig(nodeIPs("192.168.0.10"))
	for _, bad := range []string{"127.0.0.1", "169.254.169.254", "0.0.0.0", "224.0.0.1", "239.1.2.3", "255.255.255.255", "::1", "fe80::1", "ff02::1", "::"} {
		t.Run(bad, func(t *testing.T) {
			good := "10.0.0.1"
			if strings.Contains(bad, ":") {
				good = "fd00::1"
			}
			svc := makeService("ns", "np", withType(v1.ServiceTypeNodePort, 30080), withClusterIPs("10.96.0.5", "fd00:96::5"))
			svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
			st := translate(cfg, svc, makeSlice("ns", "np", "np-1", v1.ProtocolTCP, remote(bad), remote(good)))
			for k, rss := range vsMap(st) {
				for _, rs := range rss {
					if strings.HasPrefix(rs, bad+":") || strings.HasPrefix(rs, "["+bad+"]:") {
						t.Errorf("%s forwards to %s", k, rs)
					}
				}
			}
			found := false
			for _, p := range st.Problems {
				found = found || p.Kind == "EndpointSlice" && p.Reason == "InvalidEndpointAddress" && strings.Contains(p.Message, bad)
			}
			if !found {
				t.Errorf("no InvalidEndpointAddress Problem naming %s: %v", bad, st.Problems)
			}
			if !slices.ContainsFunc(st.VirtualServers, func(v VirtualServerState) bool { return v.RealServers.Len() == 1 }) {
				t.Errorf("the good endpoint %s was lost: %v", good, vsMap(st))
			}
		})
	}
}

// TestExternalIPInServiceCIDR: an external or LB IP inside the service CIDR is in
// KUBE-SERVICE-IPS, so KUBE-CLUSTER-IPS-CHECK lets the node's own connections reach its
// virtual server (kube-proxy serves it).
func TestExternalIPInServiceCIDR(t *testing.T) {
	cfg := testConfig(nodeIPs("192.168.0.10"), func(c *Config) { c.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")} })
	st := translate(cfg, makeService("ns", "s", withClusterIPs("10.96.0.5"), withType(v1.ServiceTypeLoadBalancer, 30080),
		withLB("10.96.7.7"), func(s *v1.Service) { s.Spec.ExternalIPs = []string{"10.96.8.8", "50.60.70.80"} }),
		makeSlice("ns", "s", "s-1", v1.ProtocolTCP, remote("10.0.0.1")))
	got := members(st, "KUBE-SERVICE-IPS")
	for _, want := range []string{"10.96.0.5", "10.96.7.7", "10.96.8.8"} {
		if !slices.Contains(got, want) {
			t.Errorf("KUBE-SERVICE-IPS %v lacks %s, which has a virtual server", got, want)
		}
	}
	if slices.Contains(got, "50.60.70.80") {
		t.Errorf("KUBE-SERVICE-IPS %v holds 50.60.70.80, outside every service CIDR", got)
	}
}

// TestLeadingZeroAddresses: addresses with leading zeros, which the apiserver stored
// before strict IP validation, are read as kube-proxy reads them (decimal octets).
func TestLeadingZeroAddresses(t *testing.T) {
	cfg := testConfig(nodeIPs("192.168.0.10"))
	svc := makeService("ns", "old", withClusterIPs("10.096.0.170"), withType(v1.ServiceTypeLoadBalancer, 30080), withLB("50.060.70.90"),
		func(s *v1.Service) {
			s.Spec.ExternalIPs = []string{"50.060.70.081"}
			s.Spec.LoadBalancerSourceRanges = []string{"010.001.0.0/16"}
		})
	st := translate(cfg, svc, makeSlice("ns", "old", "old-1", v1.ProtocolTCP, remote("10.000.0.001")))
	if len(st.Problems) != 0 {
		t.Errorf("Problems %v, want none", st.Problems)
	}
	vss := vsMap(st)
	for _, k := range []string{"TCP 10.96.0.170:80", "TCP 50.60.70.81:80", "TCP 50.60.70.90:80"} {
		if !slices.Equal(vss[k], []string{"10.0.0.1:80"}) {
			t.Errorf("%s forwards to %v, want [10.0.0.1:80]; all: %v", k, vss[k], vss)
		}
	}
	if got := members(st, "KUBE-LOAD-BALANCER-SOURCE-CIDR"); !slices.Equal(got, []string{"50.60.70.90,tcp:80,10.1.0.0/16"}) {
		t.Errorf("source ranges %v, want 10.1.0.0/16 for 50.60.70.90", got)
	}
}

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.096.0.170": "10.96.0.170", " 10.0.0.1 ": "10.0.0.1", "::ffff:10.0.0.1": "10.0.0.1", "fd00::01": "fd00::1",
		"010.0.0.1": "10.0.0.1", "fe80::1%eth0": "", "10.0.0.256": "", "None": "", "": "",
	} {
		a, ok := ParseAddr(in)
		if got := map[bool]string{true: a.String(), false: ""}[ok]; got != want {
			t.Errorf("ParseAddr(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"010.001.0.0/16": "10.1.0.0/16", "10.0.0.5/24": "10.0.0.0/24", "fd00::/8": "fd00::/8", "10.0.0.0/33": "", "x": "",
		// IPv4-mapped ranges, stored before strict CIDR validation: the IPv4 range they
		// map; wider than the mapped space, not a range of either family.
		"::ffff:203.0.113.0/120": "203.0.113.0/24", "::ffff:203.0.113.7/128": "203.0.113.7/32", "::ffff:0:0/96": "0.0.0.0/0",
		"::ffff:0:0/95": "", "::ffff:0:0/80": "", "::ffff:010.0.0.0/104": "10.0.0.0/8"} {
		p, ok := ParsePrefix(in)
		if got := map[bool]string{true: p.String(), false: ""}[ok]; got != want {
			t.Errorf("ParsePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProblemMessagesBounded: a 64 KiB annotation gives a Problem of at most 1 KiB
// (events.k8s.io's cap on a note), quoted, so one line in the log.
func TestProblemMessagesBounded(t *testing.T) {
	cfg := testConfig()
	huge := strings.Repeat("é\nx", 64<<10/4)
	st := translate(cfg, makeService("ns", "big", func(s *v1.Service) {
		s.Annotations = map[string]string{AnnotationScheduler: huge, AnnotationSchedulerFlags: huge}
	}))
	if len(st.Problems) != 2 {
		t.Fatalf("Problems %v, want InvalidScheduler and InvalidSchedulerFlags", reasons(st))
	}
	for _, p := range st.Problems {
		if len(p.Message) > MaxMessage || !utf8.ValidString(p.Message) || strings.Contains(p.Message, "\n") || !strings.HasSuffix(p.Message, "(truncated)") {
			t.Errorf("%s: %d bytes, valid UTF-8 %v, newline %v: %.80q...", p.Reason, len(p.Message), utf8.ValidString(p.Message),
				strings.Contains(p.Message, "\n"), p.Message)
		}
	}
}
