package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// The suite shares one control plane and two node VMs, joined by a link that carries
// the pod network (10.244.0.0/24 on node-1, 10.244.1.0/24 on node-2); each test uses its
// own Services. Most tests drive node-1; the two-node tests use both.
var (
	cp    *harness.ControlPlane
	node  *harness.Node
	node2 *harness.Node
)

func TestMain(m *testing.M) { harness.Main(m, "e2e", run) }

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	var err error
	if cp, err = harness.StartControlPlane(); err != nil {
		return 0, err
	}
	defer cp.Stop()
	dep, err := cp.ApplyDeploy(ctx)
	if err != nil {
		return 0, err
	}
	linkPort, err := harness.FreePort()
	if err != nil {
		return 0, err
	}
	// node-1's qemu listens on the link; node-2's connects once it is up.
	started := make(chan error, 1)
	go func() {
		var err error
		node, err = cp.StartNode(ctx, "node-1", dep, &harness.Link{Port: linkPort, Listen: true, IP: "192.168.100.1",
			MAC: "52:54:00:00:01:01", Routes: map[string]string{"10.244.1.0/24": "192.168.100.2"}})
		started <- err
	}()
	// node-2's qemu must not connect before node-1's listens: its connect would fail or
	// hang with a dead link (seen twice when node-1's boot was slow under CI load; the
	// two-node tests then timed out). Wait for the listening socket itself.
	if err := harness.WaitListening(linkPort, 5*time.Minute); err != nil {
		return 0, fmt.Errorf("node-1 link: %w", err)
	}
	node2, err = cp.StartNode(ctx, "node-2", dep, &harness.Link{Port: linkPort, IP: "192.168.100.2",
		MAC: "52:54:00:00:01:02", Routes: map[string]string{"10.244.0.0/24": "192.168.100.1"}})
	err1 := <-started
	// Stop whichever node did boot: a qemu left behind would spin through the next tiers.
	for _, n := range []*harness.Node{node, node2} {
		if n != nil {
			defer n.Stop()
		}
	}
	if err1 != nil || err != nil {
		return 0, fmt.Errorf("nodes: %w", errors.Join(err1, err))
	}
	for _, p := range [][2]string{{"pod1", "10.244.0.11"}, {"pod2", "10.244.0.12"}, {"pod3", "10.244.0.13"}} {
		if err := node.AddPod(p[0], p[1]); err != nil {
			return 0, err
		}
	}
	for _, p := range [][2]string{{"pod4", "10.244.1.11"}, {"pod5", "10.244.1.12"}} {
		if err := node2.AddPod(p[0], p[1]); err != nil {
			return 0, err
		}
	}
	if err := node.AddClient("client", "192.168.50.2", "192.168.50.1"); err != nil {
		return 0, err
	}
	if err := node2.AddClient("client", "192.168.60.2", "192.168.60.1"); err != nil {
		return 0, err
	}
	if _, err := node.MustExec("ip netns exec client ip addr add 192.168.50.3/24 dev eth0"); err != nil {
		return 0, err
	}
	// IPv6 for the dual-stack test: two pods and the client on node-1.
	for _, p := range [][3]string{{"pod1", "fd00:244::11", "fd00:1::1"}, {"pod2", "fd00:244::12", "fd00:1::1"}, {"client", "fd00:50::2", "fd00:50::1"}} {
		if err := node.AddIPv6(p[0], p[1], p[2], p[0] == "client"); err != nil {
			return 0, err
		}
	}
	// The daemon is up once it programs the apiserver's own "kubernetes" Service.
	for _, n := range []*harness.Node{node, node2} {
		if err := waitFor(2*time.Minute, func() bool { out, _ := n.MustExec("ipvsadm -Ln"); return strings.Contains(out, "10.96.0.1:443") }); err != nil {
			out, _ := n.MustExec("tail -50 /tmp/daemon.log")
			return 0, fmt.Errorf("%s: daemon never synced: %s", n.Name, out)
		}
	}
	if err := checkRulesBackend(node, node2); err != nil {
		return 0, err
	}
	code := m.Run()
	if code != 0 {
		out, _ := node.MustExec("tail -80 /tmp/daemon.log")
		fmt.Println("daemon log:\n" + out)
	}
	return code, nil
}

func requireEnv(t *testing.T) {
	t.Helper()
	if cp == nil {
		t.Skip("e2e environment not started")
	}
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// ipvsadm is node-1's `ipvsadm -Ln`.
func ipvsadm(t *testing.T) string {
	t.Helper()
	return nodeOut(t, "ipvsadm -Ln")
}

// nodeOut runs cmd on node-1 and returns its output; a failure ends the test.
func nodeOut(t *testing.T, cmd string) string {
	t.Helper()
	out, err := node.MustExec(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitIPVS waits until `ipvsadm -Ln` satisfies ok.
func waitIPVS(t *testing.T, what string, ok func(string) bool) {
	t.Helper()
	waitIPVSOn(t, node, what, ok)
}

// answers asks n times and returns the distinct answering pods.
func answers(t *testing.T, ns, proto, target string, n int) []string {
	t.Helper()
	seen := map[string]bool{}
	waitServing(t, ns, proto, target)
	for range n {
		a, err := node.Ask(ns, proto, target)
		if err != nil {
			t.Fatalf("%s %s from %s: %v", proto, target, ns, err)
		}
		seen[strings.Fields(a)[0]] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitServing waits up to 5 s for one answer from target. ipvsadm shows the real
// servers a moment before the same sync takes the VIP out of KUBE-NO-ENDPOINTS (real
// servers first; the other order leaves a virtual server with none for as long), so a
// test that waited for ipvsadm may be refused for those milliseconds: on the TCG VM
// under CI load, long enough for two requests.
func waitServing(t *testing.T, ns, proto, target string) {
	t.Helper()
	var last error
	if err := waitFor(5*time.Second, func() bool {
		_, last = node.Ask(ns, proto, target)
		return last == nil
	}); err != nil {
		t.Fatalf("%s %s from %s never answered: %v", proto, target, ns, last)
	}
}

// TestClusterIP: TCP and UDP through a ClusterIP created via the apiserver.
func TestClusterIP(t *testing.T) {
	requireEnv(t)
	for _, proto := range []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP} {
		t.Run(string(proto), func(t *testing.T) {
			name := "web-" + strings.ToLower(string(proto))
			svc := createService(t, service(name), 80, proto,
				podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
			vip := svc.Spec.ClusterIP + ":80"
			waitIPVS(t, "virtual server", func(s string) bool { return strings.Contains(s, vip) && strings.Contains(s, "10.244.0.12:80") })
			if got := answers(t, "client", strings.ToLower(string(proto)), vip, 6); !slices.Equal(got, []string{"pod1", "pod2"}) {
				t.Errorf("answers %v", got)
			}
		})
	}
}

// nodeNow is node-1's clock, to the second. The daemon stamps its Events with it, and an
// emulated VM's clock drifts from the host's under load: TestStartingEvent, comparing
// with the host's clock, once missed an Event stamped a moment before its start.
func nodeNow(t *testing.T) time.Time {
	t.Helper()
	sec, err := strconv.ParseInt(strings.TrimSpace(nodeOut(t, "date +%s")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(sec, 0)
}
