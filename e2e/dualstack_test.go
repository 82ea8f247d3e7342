package e2e

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestDualStack: a RequireDualStack Service gets an IPv4 and an IPv6 ClusterIP from the
// apiserver; the daemon programs both families (IPVS, kube-ipvs0, KUBE-6-* sets) and a
// client reaches the pods over IPv6.
func TestDualStack(t *testing.T) {
	requireEnv(t)
	ctx := context.Background()
	svc := createService(t, service("dual", v1.ServiceSpec{
		IPFamilyPolicy: ptr.To(v1.IPFamilyPolicyRequireDualStack), IPFamilies: []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}}),
		80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	if len(svc.Spec.ClusterIPs) != 2 {
		t.Fatalf("the apiserver gave %v; it runs with a dual-stack service range", svc.Spec.ClusterIPs)
	}
	v6 := netip.MustParseAddr(svc.Spec.ClusterIPs[1])
	sl := harness.ReadySlice("dual", "dual-2", 80, v1.ProtocolTCP, endpoints([]podEP{{"fd00:244::11", "node-1"}, {"fd00:244::12", "node-1"}})...)
	if _, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.DiscoveryV1().EndpointSlices("default").Delete(context.Background(), "dual-2", metav1.DeleteOptions{})
	})
	vip6 := netip.AddrPortFrom(v6, 80).String()
	waitIPVS(t, "IPv6 virtual server", func(s string) bool {
		b := vsBlock(s, vip6)
		return strings.Contains(b, "[fd00:244::11]:80") && strings.Contains(b, "[fd00:244::12]:80") &&
			strings.Contains(vsBlock(s, svc.Spec.ClusterIP+":80"), "10.244.0.12:80")
	})
	if err := waitFor(10*time.Second, func() bool {
		out, _ := node.MustExec("ip -6 addr show kube-ipvs0; " + setList("KUBE-6-CLUSTER-IP"))
		return strings.Contains(out, v6.String()+"/128") && strings.Contains(out, member(v6.String(), "tcp", 80))
	}); err != nil {
		out, _ := node.MustExec("ip -6 addr show kube-ipvs0; " + setList("KUBE-6-CLUSTER-IP"))
		t.Errorf("IPv6 address or set entry missing:\n%s", out)
	}
	if got := answers(t, "client", "tcp", vip6, 6); !slices.Equal(got, []string{"pod1", "pod2"}) {
		t.Errorf("IPv6 answers %v", got)
	}
	if got := answers(t, "client", "tcp", svc.Spec.ClusterIP+":80", 4); !slices.Equal(got, []string{"pod1", "pod2"}) {
		t.Errorf("IPv4 answers of the same Service %v", got)
	}
}
