package proxier

import (
	"net/netip"
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
	if owner.Name != "a" || vs.RealServers.Slice()[0].Address.String() != "10.0.0.1" || d.VirtualServerOwners(key) != 2 {
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
			for rs := range vs.RealServers.All() {
				if kernel.FamilyOf(rs.Address) != kernel.FamilyOf(vs.Address) || rs.Port == 0 {
					t.Fatalf("real server %s on %s", rs.AddrPort(), vs.VSKey)
				}
			}
		}
		for m := range st.Members.All() {
			if len(m.Set) > 31 {
				t.Fatalf("set name %q too long", m.Set)
			}
		}
		_ = st.String()
	})
}
