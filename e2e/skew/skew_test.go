// Package skew runs the daemon against kube-apiserver of each minor version in
// harness.SkewMinors (`make e2e-skew`): a user pins the node proxy while the control plane
// moves, and a proxy meets apiservers older than the client it was built with. Each
// version gets its own etcd and apiserver (built from e2e/skew/apiservers/vMINOR, the
// etcd its kubeadm deploys) and a node VM running the daemon as the DaemonSet runs it.
package skew

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// skewEnv selects this package: `make e2e` runs ./... and leaves it out.
const skewEnv = "IPVS_PROXIER_E2E_SKEW"

func TestMain(m *testing.M) {
	if os.Getenv(skewEnv) != "1" {
		fmt.Println("skew: skipped (set " + skewEnv + "=1, or run `make e2e-skew`)")
	}
	os.Exit(m.Run())
}

// TestAPIServerVersions: against each apiserver version the daemon starts, syncs, and a
// ClusterIP, a NodePort, an ETP=Local NodePort and a dual-stack Service answer.
func TestAPIServerVersions(t *testing.T) {
	requireSkew(t)
	for _, minor := range harness.SkewMinors {
		t.Run("v"+minor, func(t *testing.T) { againstAPIServer(t, minor) })
	}
}

func requireSkew(t *testing.T) {
	t.Helper()
	if os.Getenv(skewEnv) != "1" || os.Getenv("IPVS_PROXIER_E2E") != "1" {
		t.Skip("set IPVS_PROXIER_E2E=1 " + skewEnv + "=1, or run `make e2e-skew`")
	}
}

// againstAPIServer starts etcd and the apiserver of minor (with extra flags), one node
// running the daemon, and checks that each kind of Service answers. It returns the
// node, stopped when t ends.
func againstAPIServer(t *testing.T, minor string, extra ...string) *harness.Node {
	ctx := context.Background()
	bins, err := harness.BuildAPIServerAt(minor)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := harness.StartControlPlaneWith(bins, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	v, err := cp.Admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.GitVersion, "v"+minor+".") {
		t.Fatalf("the apiserver says %s, want v%s", v.GitVersion, minor)
	}
	t.Logf("apiserver %s", v.GitVersion)
	dep, err := cp.ApplyDeploy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node, err := cp.StartNode(ctx, "node-1", dep, nil)
	if node != nil {
		t.Cleanup(node.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{"pod1", "10.244.0.11"}, {"pod2", "10.244.0.12"}} {
		if err := node.AddPod(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := node.AddClient("client", "192.168.50.2", "192.168.50.1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][3]string{{"pod1", "fd00:244::11", "fd00:1::1"}, {"pod2", "fd00:244::12", "fd00:1::1"}, {"client", "fd00:50::2", "fd00:50::1"}} {
		if err := node.AddIPv6(p[0], p[1], p[2], p[0] == "client"); err != nil {
			t.Fatal(err)
		}
	}
	wait(t, node, "the first sync", 3*time.Minute, "grep -c 'Node programmed (first sync)' /tmp/daemon.log", func(s string) bool { return strings.TrimSpace(s) == "1" })

	s := &services{t: t, cp: cp, node: node}
	cip := s.create("web", v1.ServiceSpec{}, harness.Endpoint{IP: "10.244.0.11", Node: "node-1"}, harness.Endpoint{IP: "10.244.0.12", Node: "node-1"})
	s.answer("ClusterIP", netip.AddrPortFrom(netip.MustParseAddr(cip.Spec.ClusterIP), 80).String(), "pod1", "pod2")

	np := s.create("np", v1.ServiceSpec{Type: v1.ServiceTypeNodePort}, harness.Endpoint{IP: "10.244.0.12", Node: "node-1"})
	s.answer("NodePort", fmt.Sprintf("%s:%d", harness.NodeIP, np.Spec.Ports[0].NodePort), "pod2")

	local := s.create("np-local", v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal},
		harness.Endpoint{IP: "10.244.0.11", Node: "node-1"}, harness.Endpoint{IP: "10.244.1.11", Node: "node-2"})
	s.answer("ETP=Local NodePort", fmt.Sprintf("%s:%d", harness.NodeIP, local.Spec.Ports[0].NodePort), "pod1")

	dual := s.create("dual", v1.ServiceSpec{IPFamilyPolicy: ptr.To(v1.IPFamilyPolicyRequireDualStack), IPFamilies: []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}},
		harness.Endpoint{IP: "10.244.0.11", Node: "node-1"})
	if len(dual.Spec.ClusterIPs) != 2 {
		t.Fatalf("the dual-stack Service got %v", dual.Spec.ClusterIPs)
	}
	s.slice("dual", "dual-2", harness.Endpoint{IP: "fd00:244::12", Node: "node-1"})
	s.answer("dual-stack, IPv4", netip.AddrPortFrom(netip.MustParseAddr(dual.Spec.ClusterIPs[0]), 80).String(), "pod1")
	s.answer("dual-stack, IPv6", netip.AddrPortFrom(netip.MustParseAddr(dual.Spec.ClusterIPs[1]), 80).String(), "pod2")
	return node
}

// services creates the test's Services and their EndpointSlices (no controller-manager
// runs) and asks them from the client netns.
type services struct {
	t    *testing.T
	cp   *harness.ControlPlane
	node *harness.Node
}

func (s *services) create(name string, spec v1.ServiceSpec, eps ...harness.Endpoint) *v1.Service {
	s.t.Helper()
	spec.Ports = []v1.ServicePort{{Name: "p", Port: 80, Protocol: v1.ProtocolTCP}}
	svc, err := s.cp.Admin.CoreV1().Services("default").Create(context.Background(),
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	s.slice(name, name+"-1", eps...)
	return svc
}

func (s *services) slice(svc, name string, eps ...harness.Endpoint) {
	s.t.Helper()
	if _, err := s.cp.Admin.DiscoveryV1().EndpointSlices("default").Create(context.Background(),
		harness.ReadySlice(svc, name, 80, v1.ProtocolTCP, eps...), metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// answer asks target from the client until each of want has answered (within a
// minute), and fails on an answer from any other pod.
func (s *services) answer(what, target string, want ...string) {
	s.t.Helper()
	seen := map[string]bool{}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		a, err := s.node.Ask("client", "tcp", target)
		if err == nil {
			who := strings.Fields(a)[0]
			if !slices.Contains(want, who) {
				s.t.Fatalf("%s %s: answered by %s, want %v", what, target, who, want)
			}
			seen[who] = true
			if len(seen) == len(want) {
				s.t.Logf("%s %s: %v answered", what, target, want)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, _ := s.node.MustExec("ipvsadm -Ln; tail -20 /tmp/daemon.log")
	s.t.Fatalf("%s %s: answered by %v within a minute, want %v\n%s", what, target, seen, want, out)
}

// wait runs cmd on n until ok holds for its output, or fails t after d.
func wait(t *testing.T, n *harness.Node, what string, d time.Duration, cmd string, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		out, _ := n.MustExec(cmd)
		if ok(out) {
			return
		}
		if time.Now().After(deadline) {
			log, _ := n.MustExec("tail -40 /tmp/daemon.log")
			t.Fatalf("%s: not within %v (%q)\n%s", what, d, out, log)
		}
		time.Sleep(time.Second)
	}
}
