package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestRandomDifferential feeds seeded random cluster states (harness.RandomClusterState)
// through the apiserver to the daemon and to stock kube-proxy on the same kernel, and
// compares the whole IPVS table and every set. IPVS_PROXIER_DIFF_SEEDS sets how many
// seeds (1 in `make test`, 3 in `make test-all`), IPVS_PROXIER_DIFF_SEED the first one.
func TestRandomDifferential(t *testing.T) {
	requireEnv(t)
	seeds, first := 1, uint64(1)
	if harness.TestAll() {
		seeds = 3
	}
	if v, err := strconv.Atoi(os.Getenv("IPVS_PROXIER_DIFF_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	if v, err := strconv.ParseUint(os.Getenv("IPVS_PROXIER_DIFF_SEED"), 10, 64); err == nil {
		first = v
	}
	for seed := first; seed < first+uint64(seeds); seed++ {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			cs := harness.RandomClusterState(seed, 8, "rnd")
			last, fallback := applyClusterState(t, cs)
			// Settled once the last Service created is programmed. The README's ITP=Local
			// row: without a local endpoint an externally reachable Service's ClusterIP
			// has no real servers here, kube-proxy's IPVS mode falls back to remote ones.
			_, _ = compareWithKubeProxy(t, last, func(l string) bool {
				for _, vip := range fallback {
					if strings.HasPrefix(l, "rs ") && (strings.Contains(l, " "+vip+" -> ") || strings.HasPrefix(vip, ":") && strings.Contains(l, vip+" -> ")) {
						return true
					}
				}
				return false
			})
			if t.Failed() {
				t.Logf("reproduce: IPVS_PROXIER_DIFF_SEED=%d IPVS_PROXIER_DIFF_SEEDS=1 go test -run TestRandomDifferential", seed)
			}
		})
	}
}

// applyClusterState creates cs through the apiserver (the objects go when the test ends)
// and returns the last Service's ClusterIP:port, as ipvsadm prints it, and the
// VIP:ports whose real servers are not compared: the ITP=Local Services that fall back in
// kube-proxy, and those with zone hints (ClusterState.Hinted).
func applyClusterState(t *testing.T, cs *harness.ClusterState) (string, []string) {
	t.Helper()
	ctx := context.Background()
	last, fallback := "", []string(nil)
	for _, svc := range cs.Services {
		got, err := cp.Admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("seed %d: %s: %v", cs.Seed, svc.Name, err)
		}
		t.Cleanup(func() {
			_ = cp.Admin.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		})
		last = got.Spec.ClusterIP + ":" + strconv.Itoa(int(got.Spec.Ports[0].Port))
		if cs.ITPLocalFallback(svc.Name, "node-1") || cs.Hinted(svc.Name) {
			for _, p := range got.Spec.Ports {
				fallback = append(fallback, got.Spec.ClusterIP+":"+strconv.Itoa(int(p.Port)))
			}
		}
		if cs.Hinted(svc.Name) { // every VIP of it, NodePorts on any node address
			for _, p := range got.Spec.Ports {
				port := strconv.Itoa(int(p.Port))
				for _, ip := range svc.Spec.ExternalIPs {
					fallback = append(fallback, ip+":"+port)
				}
				for _, ing := range cs.LBIngress[svc.Name] {
					fallback = append(fallback, ing.IP+":"+port)
				}
				if p.NodePort > 0 {
					fallback = append(fallback, ":"+strconv.Itoa(int(p.NodePort)))
				}
			}
		}
		if ing, ok := cs.LBIngress[svc.Name]; ok {
			got.Status.LoadBalancer.Ingress = ing
			if _, err := cp.Admin.CoreV1().Services("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("seed %d: %s status: %v", cs.Seed, svc.Name, err)
			}
		}
	}
	for _, sl := range cs.Slices {
		if _, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("seed %d: slice %s: %v", cs.Seed, sl.Name, err)
		}
		t.Cleanup(func() {
			_ = cp.Admin.DiscoveryV1().EndpointSlices("default").Delete(context.Background(), sl.Name, metav1.DeleteOptions{})
		})
	}
	return last, fallback
}
