package proxier

import (
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestDesiredSharedObjects: an external IP two Services share stays bound until both
// are gone, and a virtual server two Services claim goes to the smaller name.
func TestDesiredSharedObjects(t *testing.T) {
	cfg := testConfig()
	d := NewDesired()
	shared := func(s *v1.Service) { s.Spec.ExternalIPs = []string{"50.60.70.81"} }
	a := translate(cfg, makeService("ns", "a", shared), makeSlice("ns", "a", "s", v1.ProtocolTCP, ep{ip: "10.0.0.1"}))
	b := translate(cfg, makeService("ns", "b", shared, withClusterIPs("10.20.30.42")), makeSlice("ns", "b", "s", v1.ProtocolTCP, ep{ip: "10.0.0.2"}))
	ext := netip.MustParseAddr("50.60.70.81")
	key := kernel.VSKey{Protocol: kernel.TCP, Address: ext, Port: 80}

	delta := NewDelta()
	d.Set(a, delta)
	d.Set(b, delta)
	if _, ok := delta.Addresses[ext]; !ok {
		t.Fatal("shared address not in delta")
	}
	vs, owner, _ := d.VirtualServer(key)
	if owner.Name != "a" || vs.RealServers[0].Address.String() != "10.0.0.1" || d.VirtualServerOwners(key) != 2 {
		t.Fatalf("owner %v rs %v owners %d", owner, vs.RealServers, d.VirtualServerOwners(key))
	}

	delta = NewDelta()
	d.Set(&ServiceState{Key: a.Key}, delta) // delete a
	if !d.HasAddress(ext) {
		t.Error("address unbound while b still uses it")
	}
	if _, ok := delta.Addresses[ext]; ok {
		t.Error("address in delta though its desire did not change")
	}
	if _, owner, _ = d.VirtualServer(key); owner.Name != "b" {
		t.Errorf("owner %v after a left, want b", owner)
	}
	d.Set(&ServiceState{Key: b.Key}, NewDelta())
	if d.HasAddress(ext) || len(d.Members()) != 0 || len(d.VirtualServerKeys()) != 0 {
		t.Errorf("state left after both deleted: addrs %v members %v", d.Addresses(), d.Members())
	}
}

// TestDesiredUnchangedIsFree: setting an equal state records nothing.
func TestDesiredUnchangedIsFree(t *testing.T) {
	cfg := testConfig()
	d := NewDesired()
	mk := func() *ServiceState {
		return translate(cfg, makeService("ns", "a"), makeSlice("ns", "a", "s", v1.ProtocolTCP, ep{ip: "10.0.0.1"}))
	}
	d.Set(mk(), nil)
	delta := NewDelta()
	if d.Set(mk(), delta) || !delta.Empty() {
		t.Errorf("equal state changed something: %+v", delta)
	}
}

// TestRenderRules checks the rules that depend on config and on our two additions.
func TestRenderRules(t *testing.T) {
	out := []OutFilter{{kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("1.2.3.4"), Port: 80}}}
	cases := []struct {
		name    string
		cfg     *Config
		f       kernel.Family
		want    []string
		notWant []string
	}{
		{"no cluster CIDR: src,dst masquerade", testConfig(), kernel.IPv4,
			[]string{"-m set --match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ", "-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN",
				"--match-set KUBE-NO-ENDPOINTS dst,dst -j REJECT", "--match-set KUBE-IPVS-IPS dst -j REJECT",
				"-A KUBE-IPVS-OUT-FILTER -s 1.2.3.4 -m ipvs --vaddr 1.2.3.4 --vproto tcp --vport 80 -j DROP",
				"-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000"}, nil},
		{"cluster CIDR", testConfig(func(c *Config) { c.ClusterCIDRs = mustPrefixes("10.244.0.0/16") }), kernel.IPv4,
			[]string{"--match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ", "-A KUBE-EXTERNAL-NO-LOCAL -s 10.244.0.0/16 -j RETURN"}, nil},
		// detectLocalMode: one detector for the masquerade rule and the ETP=Local exemption.
		{"NodeCIDR", testConfig(func(c *Config) {
			c.LocalMode, c.ClusterCIDRs, c.NodePodCIDRs = LocalModeNodeCIDR, mustPrefixes("10.244.0.0/16"), mustPrefixes("fd00:10::/64", "10.244.3.0/24")
		}), kernel.IPv4,
			[]string{"--match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.3.0/24 -j KUBE-MARK-MASQ", "-A KUBE-EXTERNAL-NO-LOCAL -s 10.244.3.0/24 -j RETURN"},
			[]string{"10.244.0.0/16"}},
		{"NodeCIDR without a pod CIDR of the family is the no-op detector", testConfig(func(c *Config) {
			c.LocalMode, c.ClusterCIDRs, c.NodePodCIDRs = LocalModeNodeCIDR, mustPrefixes("10.244.0.0/16"), mustPrefixes("fd00:10::/64")
		}), kernel.IPv4,
			[]string{"-m set --match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ"}, []string{"-A KUBE-EXTERNAL-NO-LOCAL -s", "fd00"}},
		{"BridgeInterface", testConfig(func(c *Config) { c.LocalMode, c.BridgeInterface = LocalModeBridgeInterface, "cbr0" }), kernel.IPv6,
			[]string{"--match-set KUBE-6-CLUSTER-IP dst,dst ! -i cbr0 -j KUBE-MARK-MASQ", "-A KUBE-EXTERNAL-NO-LOCAL -i cbr0 -j RETURN"}, nil},
		{"InterfaceNamePrefix", testConfig(func(c *Config) {
			c.LocalMode, c.InterfaceNamePrefix, c.ClusterCIDRs = LocalModeInterfaceNamePrefix, "veth", mustPrefixes("10.244.0.0/16")
		}), kernel.IPv4,
			[]string{"--match-set KUBE-CLUSTER-IP dst,dst ! -i veth+ -j KUBE-MARK-MASQ", "-A KUBE-EXTERNAL-NO-LOCAL -i veth+ -j RETURN"},
			[]string{"10.244.0.0/16"}},
		{"ClusterCIDR takes the first CIDR of the family, as kube-proxy", testConfig(func(c *Config) {
			c.LocalMode, c.ClusterCIDRs = LocalModeClusterCIDR, mustPrefixes("fd00:10::/48", "10.244.0.0/16", "10.245.0.0/16")
		}), kernel.IPv4,
			[]string{"! -s 10.244.0.0/16 -j KUBE-MARK-MASQ", "-A KUBE-EXTERNAL-NO-LOCAL -s 10.244.0.0/16 -j RETURN"}, []string{"10.245.0.0/16"}},
		{"unallocated ClusterIPs in the service CIDRs are rejected", testConfig(func(c *Config) { c.ServiceCIDRs = mustPrefixes("fd00:96::/108", "10.96.0.0/16") }), kernel.IPv4,
			[]string{`-A KUBE-CLUSTER-IPS-CHECK -d 10.96.0.0/16 -m set ! --match-set KUBE-SERVICE-IPS dst -m comment --comment "unallocated ClusterIP" -j REJECT`,
				"-A FORWARD -m comment --comment \"kubernetes unallocated cluster ips\" -m conntrack --ctstate NEW -j KUBE-CLUSTER-IPS-CHECK",
				"-A OUTPUT -m comment --comment \"kubernetes unallocated cluster ips\" -m conntrack --ctstate NEW -j KUBE-CLUSTER-IPS-CHECK"},
			[]string{"fd00:96::/108"}},
		{"no service CIDR: no check", testConfig(), kernel.IPv4, nil, []string{"-A KUBE-CLUSTER-IPS-CHECK -d"}},
		// 0-31 are valid bits, as in kube-proxy; 0 once silently became 14.
		{"masquerade bit 0", testConfig(func(c *Config) { bit := 0; c.MasqueradeBit = &bit }), kernel.IPv4,
			[]string{"-A KUBE-MARK-MASQ -j MARK --or-mark 0x00000001", "-m mark --mark 0x00000001/0x00000001"}, []string{"0x00004000"}},
		{"masquerade all", testConfig(func(c *Config) { c.MasqueradeAll = true }), kernel.IPv4,
			[]string{"--match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ"}, []string{"src,dst -j KUBE-MARK-MASQ"}},
		{"IPv6 uses KUBE-6- sets and skips IPv4 out-filters", testConfig(), kernel.IPv6,
			[]string{"-A KUBE-SERVICES -s ::1/128 -j RETURN", "--match-set KUBE-6-CLUSTER-IP"}, []string{"1.2.3.4", "KUBE-CLUSTER-IP "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := RenderRules(tc.cfg, tc.f, out)
			for _, w := range tc.want {
				if !strings.Contains(r, w) {
					t.Errorf("missing %q in\n%s", w, r)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(r, w) {
					t.Errorf("unexpected %q", w)
				}
			}
		})
	}
}

// FuzzTranslate feeds arbitrary Services and slices through Translate: it must not panic,
// and every real server must be of its virtual server's family, with ports set.
func FuzzTranslate(f *testing.F) {
	f.Add("10.20.30.41", "fd00::1", int32(80), int32(30080), "TCP", "10.0.0.1", "fd00::2", "IPv4", "LoadBalancer", "1.2.3.4", "10.0.0.0/8", "sh", "sh-port")
	f.Add("None", "", int32(0), int32(-1), "ICMP", "x", "", "FQDN", "ExternalName", "", "", "", "")
	f.Add("1.1.1.1", "::ffff:1.1.1.1", int32(70000), int32(70000), "SCTP", "::1", "1.1.1.1", "IPv6", "NodePort", "::", "::/0", "mh", "mh-fallback,bogus")
	f.Fuzz(func(t *testing.T, cip, cip2 string, port, nodePort int32, proto, epIP, epIP2, addrType, typ, lbIP, srcRange, sched, flags string) {
		svc := makeService("ns", "s", func(s *v1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = cip, []string{cip, cip2}
			s.Spec.Type = v1.ServiceType(typ)
			s.Spec.Ports = []v1.ServicePort{{Name: "p80", Port: port, NodePort: nodePort, Protocol: v1.Protocol(proto)}, {Port: port, Protocol: v1.Protocol(proto)}}
			s.Spec.ExternalIPs = []string{lbIP, epIP}
			s.Spec.LoadBalancerSourceRanges = []string{srcRange}
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = nodePort
			s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: lbIP}}
			s.Annotations = map[string]string{AnnotationScheduler: sched, AnnotationSchedulerFlags: flags}
		})
		sl := makeSlice("ns", "s", "s1", v1.Protocol(proto), local(epIP), remote(epIP2))
		sl.AddressType = discovery.AddressType(addrType)
		sl.Ports[0].Port = &port
		st := translate(testConfig(nodeIPs("10.1.1.1", "fd00::10")), svc, sl, nil)
		for _, vs := range st.VirtualServers {
			if vs.Port == 0 || !vs.Address.IsValid() {
				t.Fatalf("invalid virtual server %s", vs.VSKey)
			}
			if ValidateScheduler(vs.Scheduler) != nil {
				t.Fatalf("invalid scheduler %q", vs.Scheduler)
			}
			for _, rs := range vs.RealServers {
				if kernel.FamilyOf(rs.Address) != kernel.FamilyOf(vs.Address) || rs.Port == 0 {
					t.Fatalf("real server %s on %s", rs.AddrPort(), vs.VSKey)
				}
			}
		}
		for _, m := range st.Members {
			if len(m.Set) > 31 {
				t.Fatalf("set name %q too long", m.Set)
			}
		}
		_ = st.String()
	})
}
