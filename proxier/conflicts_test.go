package proxier

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// checkInvariants: a VIP:port with real servers is never in KUBE-NO-ENDPOINTS, and every
// member of a VIP:port-tied set belongs to the virtual server's winner.
func checkInvariants(t *testing.T, d *Desired) {
	t.Helper()
	for _, k := range d.VirtualServerKeys() {
		vs, _, _ := d.VirtualServer(k)
		no := kernel.Member{Set: SetName(setNoEndpoints, kernel.FamilyOf(k.Address)), Entry: kernel.SetEntry{IP: k.Address, Protocol: k.Protocol, Port: k.Port}}
		if !vs.RealServers.Empty() && d.HasMember(no) {
			t.Errorf("%s has %d real servers and is in KUBE-NO-ENDPOINTS", k, vs.RealServers.Len())
		}
	}
}

func members2(d *Desired, set string) []string {
	var out []string
	for e := range d.SetEntries(set) {
		out = append(out, e.String())
	}
	slices.Sort(out)
	return out
}

// TestVirtualServerConflicts: two Services on one VIP:port; the first by namespace/name
// owns every kernel object of it, whatever the order they arrive in, and the loser gets
// a VirtualServerConflict naming the winner. When the winner goes, the loser takes over.
func TestVirtualServerConflicts(t *testing.T) {
	cfg := testConfig(nodeIPs("192.168.0.10", "192.168.0.11"))
	ext := func(s *v1.Service) { s.Spec.ExternalIPs = []string{"50.60.70.81"} }
	lbLocal := func(s *v1.Service) {
		s.Spec.Type = v1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "50.60.70.90"}}
	}
	lbCluster := func(s *v1.Service) {
		lbLocal(s)
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	withEps := func(name string) *discovery.EndpointSlice {
		return makeSlice("ns", name, name+"-1", v1.ProtocolTCP, remote("10.0.0.1"))
	}
	cases := []struct {
		name           string
		a, b           *ServiceState // a wins (ns/a < ns/b)
		absent         map[string][]string
		afterA, afterB map[string][]string // set -> entries wanted once a is gone
	}{{
		name:   "external IP: the loser without endpoints does not reject the winner's traffic",
		a:      translate(cfg, makeService("ns", "a", ext), withEps("a")),
		b:      translate(cfg, makeService("ns", "b", ext, withClusterIPs("10.20.30.42"))),
		absent: map[string][]string{"KUBE-NO-ENDPOINTS": {"50.60.70.81,tcp:80"}},
		afterA: map[string][]string{"KUBE-NO-ENDPOINTS": {"10.20.30.42,tcp:80", "50.60.70.81,tcp:80"}},
	}, {
		name: "LB IP and NodePort: an ETP=Local loser puts nothing in the -LOCAL sets",
		a:    translate(cfg, makeService("ns", "a", lbCluster), withEps("a")),
		b:    translate(cfg, makeService("ns", "b", lbLocal, withClusterIPs("10.20.30.42")), withEps("b")),
		absent: map[string][]string{"KUBE-LOAD-BALANCER-LOCAL": {"50.60.70.90,tcp:80"}, "KUBE-NODE-PORT-LOCAL-TCP": {"30080"},
			"KUBE-EXTERNAL-NO-LOCAL-EP": {"50.60.70.90,tcp:80"}},
		afterA: map[string][]string{"KUBE-LOAD-BALANCER-LOCAL": {"50.60.70.90,tcp:80"}, "KUBE-NODE-PORT-LOCAL-TCP": {"30080"}},
	}}
	for _, tc := range cases {
		for _, order := range [][]*ServiceState{{tc.a, tc.b}, {tc.b, tc.a}} {
			t.Run(tc.name+"/"+order[0].Key.Name+" first", func(t *testing.T) {
				d := NewDelta()
				des := NewDesired()
				for _, st := range order {
					des.Set(st, d)
				}
				checkInvariants(t, des)
				for set, entries := range tc.absent {
					for _, e := range entries {
						if slices.Contains(members2(des, set), e) {
							t.Errorf("%s holds the loser's %s: %v", set, e, members2(des, set))
						}
					}
				}
				var conflicts []string
				for _, k := range des.TakeConflictChanges() {
					for _, p := range des.Conflicts(k) {
						conflicts = append(conflicts, p.Name+":"+p.Reason+":"+p.Message)
					}
				}
				if len(conflicts) == 0 {
					t.Fatal("no conflict reported")
				}
				for _, c := range conflicts {
					if !strings.HasPrefix(c, "b:VirtualServerConflict:") || !strings.Contains(c, "Service ns/a") {
						t.Errorf("conflict %q, want one on b naming ns/a", c)
					}
				}
				// The winner leaves: the loser owns the VIP:port, sets included.
				des.Set(&ServiceState{Key: tc.a.Key}, NewDelta())
				checkInvariants(t, des)
				for set, entries := range tc.afterA {
					for _, e := range entries {
						if !slices.Contains(members2(des, set), e) {
							t.Errorf("after a left, %s lacks b's %s: %v", set, e, members2(des, set))
						}
					}
				}
				if p := des.Conflicts(tc.b.Key); len(p) != 0 {
					t.Errorf("b still in conflict alone: %v", p)
				}
				des.Set(&ServiceState{Key: tc.b.Key}, NewDelta())
				if len(des.Members()) != 0 || len(des.VirtualServerKeys()) != 0 || len(des.OutFilters()) != 0 {
					t.Errorf("left after both deleted: %v %v", des.Members(), des.VirtualServerKeys())
				}
			})
		}
	}
}
