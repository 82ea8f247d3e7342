package benchkit

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestGrowThroughEtcd: Services written straight into etcd are served by the apiserver as
// if created through it (the workload's shapes, one ClusterIP and NodePort each, an
// IPAddress object per ClusterIP, one EndpointSlice each), across two steps, and a
// Service created through the API afterwards gets a ClusterIP none of them holds.
func TestGrowThroughEtcd(t *testing.T) {
	harness.RequireE2E(t)
	cp, err := StartControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ctx := context.Background()
	c, err := LoaderClient(cp.RESTCfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &Workload{Client: c, Node: NodeName, Endpoints: 2, Parallel: 4, Etcd: cp.EtcdURL}
	for _, n := range []int{150, 400} {
		if err := w.Grow(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	svcs, err := c.CoreV1().Services(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, s := range svcs.Items {
		if other, dup := ips[s.Spec.ClusterIP]; dup || s.Spec.ClusterIP == "" {
			t.Errorf("%s: ClusterIP %q (also %s)", s.Name, s.Spec.ClusterIP, other)
		}
		ips[s.Spec.ClusterIP] = s.Name
		for _, p := range append([]int32{s.Spec.HealthCheckNodePort}, s.Spec.Ports[0].NodePort) {
			if other, dup := ports[p]; p != 0 && dup {
				t.Errorf("%s: NodePort %d also %s's", s.Name, p, other)
			}
			ports[p] = s.Name
		}
	}
	if len(svcs.Items) != 400 || len(w.VIPs) != 400 {
		t.Fatalf("%d Services listed, %d VIPs, want 400", len(svcs.Items), len(w.VIPs))
	}
	written := 0
	for i, vip := range w.VIPs {
		s, err := c.CoreV1().Services(Namespace).Get(ctx, SvcName(i), metav1.GetOptions{})
		if err != nil || s.Spec.ClusterIP != vip {
			t.Fatalf("Service %d: %v, ClusterIP %q, want %q", i, err, s.Spec.ClusterIP, vip)
		}
		want := w.service("", i)
		if s.Spec.Type != want.Spec.Type && !(want.Spec.Type == "" && s.Spec.Type == v1.ServiceTypeClusterIP) ||
			s.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal != (want.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal) ||
			s.Spec.SessionAffinity != want.Spec.SessionAffinity && want.Spec.SessionAffinity != "" {
			t.Errorf("Service %d is not of its shape: %+v", i, s.Spec)
		}
		ipa, err := c.NetworkingV1().IPAddresses().Get(ctx, vip, metav1.GetOptions{})
		if err != nil || ipa.Spec.ParentRef == nil || ipa.Spec.ParentRef.Name != s.Name {
			t.Errorf("IPAddress %s: %v %+v", vip, err, ipa)
		} else if strings.HasPrefix(string(ipa.UID), uidPrefix) {
			written++
		}
	}
	// The loader writes the IPAddress itself, with the Service: the apiserver's repair
	// loop would add one too, but only after a window in which the API could hand the
	// address out again.
	if written != 400-20 {
		t.Errorf("%d IPAddress objects written by the loader, want 380 (all but the templates')", written)
	}
	slices, err := c.DiscoveryV1().EndpointSlices(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(slices.Items) != 400 {
		t.Fatalf("%v: %d EndpointSlices, want 400", err, len(slices.Items))
	}
	for _, sl := range slices.Items {
		if len(sl.Endpoints) != 2 || netip.MustParseAddr(sl.Endpoints[0].Addresses[0]).Is6() {
			t.Errorf("slice %s: %+v", sl.Name, sl.Endpoints)
		}
	}
	// The API's allocator knows the ClusterIPs written to etcd: a /16 holds 65,534, so
	// of 200 new ones about one would land on ours if it did not.
	for i := range 200 {
		ip, err := w.Create(ctx, "late-"+SvcName(i), 2*i, 1)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := ips[ip]; dup {
			t.Fatalf("a Service created through the API got %s, %s's ClusterIP", ip, other)
		}
	}
}
