package proxier

import (
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The node of the trace cases: 192.168.1.10 on eth0, pods on veth* in 10.244.0.0/24 of
// the cluster's 10.244.0.0/16; outside clients come in on eth0.
const (
	nodeIP  = "192.168.1.10"
	podIP   = "10.244.0.7"
	outside = "203.0.113.5"
)

func svcAt(name, ip string, mut ...func(*v1.Service)) *v1.Service {
	return makeService("ns", name, append([]func(*v1.Service){withClusterIPs(ip)}, mut...)...)
}

func slicesOf(name string, eps ...ep) []*discovery.EndpointSlice {
	return []*discovery.EndpointSlice{makeSlice("ns", name, name+"-1", v1.ProtocolTCP, eps...)}
}

func withExternalIP(ip string) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, ip) }
}

func withSourceRanges(r ...string) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = r }
}

// TestTrace runs packets through the rendered rules, sets and IPVS table. Each case
// names the docs/differences.md row (or kube-proxy behaviour) it pins.
func TestTrace(t *testing.T) {
	clusterCIDR := func(c *Config) { c.ClusterCIDRs = mustPrefixes("10.244.0.0/16") }
	type check struct {
		p    packet
		want string
	}
	cases := []struct {
		name   string
		cfg    []func(*Config)
		svcs   []*v1.Service
		slices map[string][]*discovery.EndpointSlice
		checks []check
	}{
		{"ClusterIP: pods direct, the node masqueraded; other VIP ports and no-endpoint ports refused (kubernetes#72236, #78994)",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("web", "10.96.0.10"), svcAt("empty", "10.96.0.11")},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"), remote("10.244.1.6"))},
			[]check{
				{pkt(podIP, "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80,10.244.1.6:80"},
				{pkt(nodeIP, "10.96.0.10", 80, ""), "ipvs 10.244.1.5:80,10.244.1.6:80 masq"},
				{pkt(podIP, "10.96.0.10", 22, "veth1"), "reject"},
				{pkt(podIP, "10.96.0.11", 80, "veth1"), "reject"},
				{pkt(podIP, nodeIP, 22, "veth1"), "host"},
			}},
		{"no cluster CIDR: only the node's own traffic (source a VIP) is masqueraded",
			nil,
			[]*v1.Service{svcAt("web", "10.96.0.10")},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80"},
				{pkt("10.96.0.10", "10.96.0.10", 80, ""), "ipvs 10.244.1.5:80 masq"},
			}},
		{"masqueradeAll", []func(*Config){clusterCIDR, func(c *Config) { c.MasqueradeAll = true }},
			[]*v1.Service{svcAt("web", "10.96.0.10")},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"))},
			[]check{{pkt(podIP, "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80 masq"}}},
		{"NodePort ETP=Cluster: outside clients masqueraded",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("np", "10.96.0.12", withType(v1.ServiceTypeNodePort, 30080))},
			map[string][]*discovery.EndpointSlice{"np": slicesOf("np", remote("10.244.1.5"))},
			[]check{
				{pkt(outside, nodeIP, 30080, "eth0"), "ipvs 10.244.1.5:80 masq"},
				{pkt(outside, nodeIP, 30081, "eth0"), "host"},
			}},
		{"ETP=Local with a local endpoint: only it, the client's source kept",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("np", "10.96.0.12", withType(v1.ServiceTypeNodePort, 30080), withETPLocal)},
			map[string][]*discovery.EndpointSlice{"np": slicesOf("np", local("10.244.0.5"), remote("10.244.1.5"))},
			[]check{
				{pkt(outside, nodeIP, 30080, "eth0"), "ipvs 10.244.0.5:80"},
				{pkt(podIP, "10.96.0.12", 80, "veth1"), "ipvs 10.244.0.5:80,10.244.1.5:80"},
			}},
		{"Differences: ETP=Local without a local endpoint drops outside traffic, serves pods and the node (kubernetes#93456)",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("np", "10.96.0.12", withType(v1.ServiceTypeNodePort, 30080), withETPLocal, withExternalIP("198.51.100.7"))},
			map[string][]*discovery.EndpointSlice{"np": slicesOf("np", remote("10.244.1.5"))},
			[]check{
				{pkt(outside, nodeIP, 30080, "eth0"), "drop"},
				{pkt(outside, "198.51.100.7", 80, "eth0"), "drop"},
				{pkt(podIP, nodeIP, 30080, "veth1"), "ipvs 10.244.1.5:80"},
				{pkt(nodeIP, nodeIP, 30080, ""), "ipvs 10.244.1.5:80"}, // an ETP=Local NodePort is never masqueraded
			}},
		{"Differences: detectLocalMode NodeCIDR decides the ETP=Local exemption, without a cluster CIDR",
			[]func(*Config){nodeIPs(nodeIP), func(c *Config) { c.LocalMode, c.NodePodCIDRs = LocalModeNodeCIDR, mustPrefixes("10.244.0.0/24") }},
			[]*v1.Service{svcAt("np", "10.96.0.12", withType(v1.ServiceTypeNodePort, 30080), withETPLocal)},
			map[string][]*discovery.EndpointSlice{"np": slicesOf("np", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, nodeIP, 30080, "veth1"), "ipvs 10.244.1.5:80"},
				{pkt("10.244.1.9", nodeIP, 30080, "eth0"), "drop"}, // another node's pod: not local by NodeCIDR
				{pkt(outside, nodeIP, 30080, "eth0"), "drop"},
			}},
		{"detectLocalMode InterfaceNamePrefix: the interface decides, not the address",
			[]func(*Config){nodeIPs(nodeIP), func(c *Config) { c.LocalMode, c.InterfaceNamePrefix = LocalModeInterfaceNamePrefix, "veth" }},
			[]*v1.Service{svcAt("np", "10.96.0.12", withType(v1.ServiceTypeNodePort, 30080), withETPLocal)},
			map[string][]*discovery.EndpointSlice{"np": slicesOf("np", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, nodeIP, 30080, "veth1"), "ipvs 10.244.1.5:80"},
				{pkt(podIP, nodeIP, 30080, "eth0"), "drop"},
				{pkt(podIP, "10.96.0.12", 80, "veth1"), "ipvs 10.244.1.5:80"},
				{pkt(podIP, "10.96.0.12", 80, "eth0"), "ipvs 10.244.1.5:80 masq"},
			}},
		{"Differences: ITP=Local without a local endpoint, Service also external: rejected",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("itp", "10.96.0.13", withType(v1.ServiceTypeNodePort, 30081), withITPLocal)},
			map[string][]*discovery.EndpointSlice{"itp": slicesOf("itp", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, "10.96.0.13", 80, "veth1"), "reject"},
				{pkt(outside, nodeIP, 30081, "eth0"), "ipvs 10.244.1.5:80 masq"},
			}},
		{"Differences: an unallocated ClusterIP is rejected at once; outside the service CIDRs, routed on",
			[]func(*Config){clusterCIDR, func(c *Config) { c.ServiceCIDRs = mustPrefixes("10.96.0.0/16") }},
			[]*v1.Service{svcAt("web", "10.96.0.10")},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, "10.96.7.7", 80, "veth1"), "reject"},
				{pkt(nodeIP, "10.96.7.7", 80, ""), "reject"},
				{pkt(podIP, "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80"},
				{pkt(podIP, "10.97.0.1", 80, "veth1"), "forward"},
			}},
		{"loadBalancerSourceRanges: listed clients only; the node itself through the VIP when its IP is inside",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("lb", "10.96.0.14", withLB("198.51.100.9"), withSourceRanges("203.0.113.0/24", "192.168.1.0/24"))},
			map[string][]*discovery.EndpointSlice{"lb": slicesOf("lb", remote("10.244.1.5"))},
			[]check{
				{pkt(outside, "198.51.100.9", 80, "eth0"), "ipvs 10.244.1.5:80 masq"},
				{pkt("198.18.0.1", "198.51.100.9", 80, "eth0"), "drop"},
				{pkt("198.51.100.9", "198.51.100.9", 80, ""), "ipvs 10.244.1.5:80 masq"},
			}},
		{"Differences: a source range that does not parse keeps the family filtered (fails closed)",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("lb", "10.96.0.14", withLB("198.51.100.9"), withSourceRanges("not-a-cidr"))},
			map[string][]*discovery.EndpointSlice{"lb": slicesOf("lb", remote("10.244.1.5"))},
			[]check{{pkt(outside, "198.51.100.9", 80, "eth0"), "drop"}}},
		{"detectLocalMode BridgeInterface: pods behind the bridge are local",
			[]func(*Config){nodeIPs(nodeIP), func(c *Config) { c.LocalMode, c.BridgeInterface = LocalModeBridgeInterface, "cbr0" }},
			[]*v1.Service{svcAt("np", "10.96.0.12", withType(v1.ServiceTypeNodePort, 30080), withETPLocal)},
			map[string][]*discovery.EndpointSlice{"np": slicesOf("np", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, nodeIP, 30080, "cbr0"), "ipvs 10.244.1.5:80"},
				{pkt(podIP, nodeIP, 30080, "eth0"), "drop"},
				{pkt(podIP, "10.96.0.12", 80, "cbr0"), "ipvs 10.244.1.5:80"},
				{pkt(podIP, "10.96.0.12", 80, "eth0"), "ipvs 10.244.1.5:80 masq"},
			}},
		{"NodeCIDR without a pod CIDR of the family: no detector, only the node is exempt",
			[]func(*Config){nodeIPs(nodeIP), func(c *Config) {
				c.LocalMode, c.ClusterCIDRs, c.NodePodCIDRs = LocalModeNodeCIDR, mustPrefixes("10.244.0.0/16"), mustPrefixes("fd00:10::/64")
			}},
			[]*v1.Service{svcAt("np", "10.96.0.12", withType(v1.ServiceTypeNodePort, 30080), withETPLocal)},
			map[string][]*discovery.EndpointSlice{"np": slicesOf("np", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, nodeIP, 30080, "veth1"), "drop"},
				{pkt(nodeIP, nodeIP, 30080, ""), "ipvs 10.244.1.5:80"},
				{pkt(podIP, "10.96.0.12", 80, "veth1"), "ipvs 10.244.1.5:80"},
			}},
		{"ClusterCIDR mode takes the first CIDR of the family, as kube-proxy",
			[]func(*Config){func(c *Config) {
				c.LocalMode, c.ClusterCIDRs = LocalModeClusterCIDR, mustPrefixes("fd00:10::/48", "10.244.0.0/16", "10.245.0.0/16")
			}},
			[]*v1.Service{svcAt("web", "10.96.0.10")},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"))},
			[]check{
				{pkt(podIP, "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80"},
				{pkt("10.245.0.7", "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80 masq"},
			}},
		{"no service CIDR: no unallocated-ClusterIP check",
			[]func(*Config){clusterCIDR},
			[]*v1.Service{svcAt("web", "10.96.0.10")},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"))},
			[]check{{pkt(podIP, "10.96.7.7", 80, "veth1"), "forward"}}},
		{"masquerade bit 0 is valid (it once became 14)",
			[]func(*Config){clusterCIDR, func(c *Config) { bit := 0; c.MasqueradeBit = &bit }},
			[]*v1.Service{svcAt("web", "10.96.0.10")},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"))},
			[]check{
				{pkt(nodeIP, "10.96.0.10", 80, ""), "ipvs 10.244.1.5:80 masq"},
				{pkt(podIP, "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80"},
			}},
		{"source ranges without the node: the node's own traffic from the VIP is dropped (KUBE-IPVS-OUT-FILTER)",
			[]func(*Config){clusterCIDR, nodeIPs(nodeIP)},
			[]*v1.Service{svcAt("lb", "10.96.0.14", withLB("198.51.100.9"), withSourceRanges("203.0.113.0/24"))},
			map[string][]*discovery.EndpointSlice{"lb": slicesOf("lb", remote("10.244.1.5"))},
			[]check{
				{pkt("198.51.100.9", "198.51.100.9", 80, ""), "drop"},
				{pkt(outside, "198.51.100.9", 80, "eth0"), "ipvs 10.244.1.5:80 masq"},
			}},
		{"hairpin: a pod through its own Service is masqueraded",
			[]func(*Config){clusterCIDR},
			[]*v1.Service{svcAt("self", "10.96.0.15")},
			map[string][]*discovery.EndpointSlice{"self": slicesOf("self", local("10.244.0.5"))},
			[]check{{pkt("10.244.0.5", "10.96.0.15", 80, "veth5"), "ipvs 10.244.0.5:80 masq"}}},
		{"Differences: two Services on one external IP: the first by namespace/name owns it",
			[]func(*Config){clusterCIDR},
			[]*v1.Service{svcAt("b", "10.96.0.17", withExternalIP("198.51.100.20")), svcAt("a", "10.96.0.16", withExternalIP("198.51.100.20"))},
			map[string][]*discovery.EndpointSlice{"a": slicesOf("a", remote("10.244.1.5")), "b": slicesOf("b")},
			[]check{{pkt(outside, "198.51.100.20", 80, "eth0"), "ipvs 10.244.1.5:80 masq"}}},
		{"Differences: special external IPs are never bound or programmed",
			[]func(*Config){clusterCIDR},
			[]*v1.Service{svcAt("web", "10.96.0.10", withExternalIP("0.0.0.0"), withExternalIP("10.96.0.10"))},
			map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("10.244.1.5"))},
			[]check{
				{pkt(outside, "0.0.0.0", 80, "eth0"), "forward"},
				{pkt(podIP, "10.96.0.10", 80, "veth1"), "ipvs 10.244.1.5:80"},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.cfg...)
			w := newWorld(t, cfg, tc.svcs, tc.slices)
			for _, c := range tc.checks {
				if got := w.trace(t, c.p); got.String() != c.want {
					t.Errorf("%v: %v, want %s", c.p, got, c.want)
				}
			}
		})
	}
}

// TestTraceIPv6: the IPv6 rules and KUBE-6- sets give the same outcomes.
func TestTraceIPv6(t *testing.T) {
	cfg := testConfig(func(c *Config) { c.ClusterCIDRs = mustPrefixes("fd00:244::/64") })
	svcs := []*v1.Service{svcAt("web", "fd00:96::10"), svcAt("empty", "fd00:96::11")}
	w := newWorld(t, cfg, svcs, map[string][]*discovery.EndpointSlice{"web": slicesOf("web", remote("fd00:244:1::5"))})
	for p, want := range map[packet]string{
		{src: netip.MustParseAddr("fd00:244::7"), dst: netip.MustParseAddr("fd00:96::10"), proto: kernel.TCP, port: 80, in: "veth1"}: "ipvs [fd00:244:1::5]:80",
		{src: netip.MustParseAddr("fd00:244::7"), dst: netip.MustParseAddr("fd00:96::11"), proto: kernel.TCP, port: 80, in: "veth1"}: "reject",
		{src: netip.MustParseAddr("fd00:244::7"), dst: netip.MustParseAddr("fd00:96::10"), proto: kernel.TCP, port: 22, in: "veth1"}: "reject",
	} {
		if got := w.trace(t, p); got.String() != want {
			t.Errorf("%v: %v, want %s", p, got, want)
		}
	}
}
