package reconcile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// byteStream turns fuzz input into choices; it yields zeros once exhausted.
type byteStream struct{ b []byte }

func (s *byteStream) next() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func pick[T any](s *byteStream, from ...T) T { return from[int(s.next())%len(from)] }

// Small pools, so that the fuzzer makes Services collide: shared external and LB IPs,
// shared ports and NodePorts, odd protocols, special addresses, both families.
var (
	fzVIPs     = []string{"203.0.113.1", "203.0.113.2", "192.168.0.10", "127.0.0.1", "0.0.0.0", "224.0.0.1", "169.254.1.1", "2001:db8::1", "bogus", ""}
	fzRanges   = []string{"203.0.113.0/24", "10.0.0.0/8", "::/0", "0.0.0.0/0", "2001:db8::/32", "1.2.3.4/33", ""}
	fzProtos   = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP, "", "ICMP"}
	fzPorts    = []int32{80, 443, 53, 0, 70000}
	fzNodePort = []int32{0, 30080, 30081, 40000}
	fzEPs      = []string{"10.244.0.1", "10.244.0.2", "10.244.1.1", "fd00:244::1", "x"}
	fzNodes    = []string{"test-node", "other", ""}
)

// fuzzCluster builds Services and EndpointSlices from data.
func fuzzCluster(data []byte) []any {
	s := &byteStream{b: data}
	var objs []any
	n := 1 + int(s.next())%6
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		svc := &v1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: pick(s, "a", "b"), Name: name}}
		sp := &svc.Spec
		cip := fmt.Sprintf("10.96.0.%d", 1+int(s.next())%4) // ClusterIPs collide too
		sp.ClusterIP, sp.ClusterIPs = cip, []string{cip}
		if s.next()%4 == 0 {
			sp.ClusterIPs = append(sp.ClusterIPs, "fd00:96::1")
		}
		sp.Type = pick(s, v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort, v1.ServiceTypeLoadBalancer)
		sp.ExternalTrafficPolicy = pick(s, v1.ServiceExternalTrafficPolicyCluster, v1.ServiceExternalTrafficPolicyLocal)
		if s.next()%3 == 0 {
			sp.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
		}
		for range int(s.next()) % 3 {
			sp.ExternalIPs = append(sp.ExternalIPs, pick(s, fzVIPs...))
		}
		for range int(s.next()) % 3 {
			sp.LoadBalancerSourceRanges = append(sp.LoadBalancerSourceRanges, pick(s, fzRanges...))
		}
		for range int(s.next()) % 3 {
			ing := v1.LoadBalancerIngress{IP: pick(s, fzVIPs...)}
			if s.next()%5 == 0 {
				ing.IPMode = ptr.To(v1.LoadBalancerIPModeProxy)
			}
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, ing)
		}
		if s.next()%4 == 0 {
			sp.SessionAffinity = v1.ServiceAffinityClientIP
		}
		for j := range 1 + int(s.next())%2 {
			sp.Ports = append(sp.Ports, v1.ServicePort{Name: fmt.Sprintf("p%d", j), Port: pick(s, fzPorts...),
				Protocol: pick(s, fzProtos...), NodePort: pick(s, fzNodePort...)})
		}
		objs = append(objs, svc)
		for k := range int(s.next()) % 3 {
			sl := &discovery.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
				ObjectMeta:  metav1.ObjectMeta{Namespace: svc.Namespace, Name: fmt.Sprintf("%s-%d", name, k), Labels: map[string]string{discovery.LabelServiceName: name}},
				AddressType: pick(s, discovery.AddressTypeIPv4, discovery.AddressTypeIPv6)}
			for _, p := range sp.Ports {
				sl.Ports = append(sl.Ports, discovery.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(int32(8000 + int(s.next())%3)), Protocol: ptr.To(p.Protocol)})
			}
			for range int(s.next()) % 4 {
				sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{Addresses: []string{pick(s, fzEPs...)}, NodeName: ptr.To(pick(s, fzNodes...)),
					Conditions: discovery.EndpointConditions{Ready: ptr.To(s.next()%3 != 0), Serving: ptr.To(s.next()%4 != 0), Terminating: ptr.To(s.next()%4 == 0)}})
			}
			objs = append(objs, sl)
		}
	}
	return objs
}

// planOf loads objs (as a JSON stream, through the loader), syncs them into a fresh fake
// kernel and returns the syncer, the fake and the printed plan.
func planOf(t *testing.T, objs []any) (*Syncer, *kernel.Fake, string) {
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	src := source.NewStaticSource()
	if _, err := source.LoadObjects(&buf, src, testNode); err != nil {
		t.Fatalf("loader: %v", err)
	}
	src.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}})
	fake := kernel.NewFake()
	cfg := proxier.Config{NodeName: testNode, NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.0.10"), netip.MustParseAddr("2001:db8:ff::10")},
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}.WithDefaults()
	s := NewSyncer(Options{Config: cfg}, fake.Kernel(), src, source.NewTracker(nil))
	if err := s.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	checkRealServerCount(t, s)
	c := s.Config()
	return s, fake, s.Desired().Plan(&c)
}

// FuzzPlan runs whole clusters (many Services and slices in one input) through the
// loader, the syncer on the fake kernel and the plan printer, and checks on every input:
// no panic; no VIP:port both with real servers and in KUBE-NO-ENDPOINTS; every
// load-balancer VIP:port with source ranges of its family has its firewall entry; every
// bound address is wanted and every virtual server's VIP is bound or a node address;
// the plan does not depend on the order the objects arrive in.
func FuzzPlan(f *testing.F) {
	for _, seed := range []string{"", "\x05\x01\x02\x03\x04\x05\x06\x07", "conflicts: two Services, one external IP",
		"\x03\x00\x00\x02\x00\x01\x01\x02\x00\x00\x01\x02\x00\x00\x00\x00\x02\x01\x03\x00\x00\x00\x02\x00",
		strings.Repeat("\x01\x02\x00", 40), strings.Repeat("\xff\x10\x07\x03", 30)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs := fuzzCluster(data)
		s, fake, plan := planOf(t, objs)
		d := s.Desired()
		checkFakeInvariants(t, fake, d)
		checkFirewalls(t, objs, fake, d)
		reversed := slices.Clone(objs)
		slices.Reverse(reversed)
		if _, _, again := planOf(t, reversed); again != plan {
			t.Errorf("the plan depends on the input order:\n%s\n--- reversed:\n%s", plan, again)
		}
	})
}

func checkFakeInvariants(t *testing.T, fake *kernel.Fake, d *proxier.Desired) {
	t.Helper()
	vss, _ := fake.ListVirtualServers()
	bound, _ := fake.ListAddresses(proxier.DefaultDummyDevice)
	nodeIPs := []netip.Addr{netip.MustParseAddr("192.168.0.10"), netip.MustParseAddr("2001:db8:ff::10")}
	noEP := map[string]bool{}
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		entries, _ := fake.ListEntries(proxier.SetName("KUBE-NO-ENDPOINTS", f))
		for _, e := range entries {
			noEP[e.String()] = true
		}
	}
	for _, vs := range vss {
		rss, _ := fake.ListRealServers(vs.VSKey)
		e := kernel.SetEntry{IP: vs.Address, Protocol: vs.Protocol, Port: vs.Port}
		if len(rss) > 0 && noEP[e.String()] {
			t.Errorf("%s has %d real servers and is in KUBE-NO-ENDPOINTS", vs.VSKey, len(rss))
		}
		if !slices.Contains(bound, vs.Address) && !slices.Contains(nodeIPs, vs.Address) {
			t.Errorf("virtual server %s on an address neither bound nor a node address", vs.VSKey)
		}
		if a := vs.Address; a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalUnicast() {
			t.Errorf("virtual server on a special address: %s", vs.VSKey)
		}
	}
	for _, a := range bound {
		if !d.HasAddress(a) {
			t.Errorf("address %s bound that no Service wants", a)
		}
	}
}

// checkFirewalls: each LB VIP:port whose Service wins it and lists a valid source range
// of the VIP's family, and no /0 of it, is in KUBE-LOAD-BALANCER-FW.
func checkFirewalls(t *testing.T, objs []any, fake *kernel.Fake, d *proxier.Desired) {
	t.Helper()
	for _, o := range objs {
		svc, ok := o.(*v1.Service)
		if !ok || svc.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			a, err := netip.ParseAddr(ing.IP)
			if err != nil || ing.IPMode != nil {
				continue
			}
			f := kernel.FamilyOf(a)
			filtered, open := false, false
			for _, r := range svc.Spec.LoadBalancerSourceRanges {
				p, err := netip.ParsePrefix(r)
				if err != nil {
					filtered = filtered || r != ""
					continue
				}
				if kernel.FamilyOf(p.Addr()) == f {
					filtered = true
					open = open || p.Bits() == 0
				}
			}
			if !filtered || open {
				continue
			}
			fw, _ := fake.ListEntries(proxier.SetName("KUBE-LOAD-BALANCER-FW", f))
			for _, sp := range svc.Spec.Ports {
				proto := map[v1.Protocol]kernel.Protocol{v1.ProtocolTCP: kernel.TCP, "": kernel.TCP, v1.ProtocolUDP: kernel.UDP, v1.ProtocolSCTP: kernel.SCTP}[sp.Protocol]
				key := kernel.VSKey{Protocol: proto, Address: a, Port: uint16(sp.Port)}
				_, owner, ok := d.VirtualServer(key)
				if !ok || owner != (proxier.ServiceKey{Namespace: svc.Namespace, Name: svc.Name}) || sp.Port <= 0 || sp.Port > 65535 {
					continue
				}
				if !slices.Contains(fw, kernel.SetEntry{IP: a, Protocol: proto, Port: uint16(sp.Port)}) {
					t.Errorf("%s/%s: LB %s with source ranges %v has no firewall entry", svc.Namespace, svc.Name, key, svc.Spec.LoadBalancerSourceRanges)
				}
			}
		}
	}
}
