package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// answersFrom asks n times from netns ns on node nd and returns the distinct answering
// pods and the client addresses they saw.
func answersFrom(t *testing.T, nd *harness.Node, ns, proto, target string, n int) (pods, clients []string) {
	t.Helper()
	seenPods, seenClients := map[string]bool{}, map[string]bool{}
	for range n {
		a, err := nd.Ask(ns, proto, target)
		if err != nil {
			// Say what the link between the VMs and the node's IPVS looked like (a dead link
			// from a harness boot race failed these tests twice; fixed in TestMain).
			t.Fatalf("%s %s from %s on %s: %v\n%s", proto, target, ns, nd.Name, err, linkDiagnostics(nd, target))
		}
		f := strings.Fields(a)
		seenPods[f[0]] = true
		if host, _, ok := strings.Cut(f[1], ":"); ok {
			seenClients[host] = true
		}
	}
	for k := range seenPods {
		pods = append(pods, k)
	}
	for k := range seenClients {
		clients = append(clients, k)
	}
	sort.Strings(pods)
	sort.Strings(clients)
	return pods, clients
}

// linkDiagnostics pings the other node over the VM link and shows nd's virtual server
// for target and its conntrack count.
func linkDiagnostics(nd *harness.Node, target string) string {
	peer := node2.IP
	if nd == node2 {
		peer = node.IP
	}
	out, _ := nd.MustExec("ping -c 2 -W 1 " + peer + " 2>&1 | tail -2; ipvsadm -Ln -t " + target + " 2>&1; cat /proc/sys/net/netfilter/nf_conntrack_count")
	if strings.Contains(out, " 0 packets received") {
		// The link itself is down: show both ends.
		for _, n := range []*harness.Node{node, node2} {
			o, _ := n.MustExec("ip -s link show eth1; ip addr show eth1; ip neigh show dev eth1; ip route | grep eth1; iptables-save -c | grep -E 'DROP|REJECT' | grep -v '^\\[0:0\\]'; ip addr show kube-ipvs0 | grep -c inet")
			out += "\n--- " + n.Name + ":\n" + o
		}
	}
	return out
}

func waitIPVSOn(t *testing.T, nd *harness.Node, what string, ok func(string) bool) {
	t.Helper()
	var last string
	if err := waitFor(30*time.Second, func() bool { last, _ = nd.MustExec("ipvsadm -Ln"); return ok(last) }); err != nil {
		t.Fatalf("%s on %s: %v\n%s", what, nd.Name, err, last)
	}
}

// TestCrossNodeEndpoints: a ClusterIP with one endpoint per node is served from both
// nodes, across the link; a pod's own address reaches the remote backend unchanged.
func TestCrossNodeEndpoints(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("spread"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.1.11", "node-2"})
	vip := svc.Spec.ClusterIP + ":80"
	for _, nd := range []*harness.Node{node, node2} {
		waitIPVSOn(t, nd, "both endpoints", func(s string) bool {
			b := vsBlock(s, vip)
			return strings.Contains(b, "10.244.0.11:80") && strings.Contains(b, "10.244.1.11:80")
		})
	}
	for _, c := range []struct {
		nd *harness.Node
		ns string
	}{{node, "client"}, {node2, "client"}, {node, "pod2"}, {node2, "pod5"}} {
		pods, clients := answersFrom(t, c.nd, c.ns, "tcp", vip, 8)
		if !slices.Equal(pods, []string{"pod1", "pod4"}) {
			t.Errorf("from %s on %s: answers %v, want pod1 and pod4", c.ns, c.nd.Name, pods)
		}
		if c.ns != "client" && !slices.Equal(clients, []string{map[string]string{"pod2": "10.244.0.12", "pod5": "10.244.1.12"}[c.ns]}) {
			t.Errorf("from %s on %s: backends saw %v; in-cluster traffic must keep the pod's address", c.ns, c.nd.Name, clients)
		}
	}
}

// hcAsk reads a healthCheckNodePort answer: code and localEndpoints.
func hcAsk(t *testing.T, from *harness.Node, url string) (int, int) {
	t.Helper()
	r, err := from.Get("client", url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	var b struct{ LocalEndpoints int }
	if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
		t.Fatalf("GET %s: body %q", url, r.Body)
	}
	return r.Code, b.LocalEndpoints
}

// TestExternalTrafficPolicyLocalTwoNodes: an ETP=Local LoadBalancer with one endpoint
// on each node: each node sends external traffic only to its own endpoint, and the
// backend sees the real client address. With the endpoint on node-2 only, node-1 refuses
// external traffic while in-cluster clients on node-1 still reach the LB IP; the health
// checks say which node to use, and flip when the endpoint moves.
func TestExternalTrafficPolicyLocalTwoNodes(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("etp-lb", v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal}), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.1.11", "node-2"})
	const lbIP = "203.0.113.40"
	setLBIngress(t, svc, lbIP)
	lb, np := lbIP+":80", fmt.Sprint(svc.Spec.Ports[0].NodePort)
	local := map[*harness.Node]struct{ pod, ep, client, ip string }{
		node:  {"pod1", "10.244.0.11:80", "192.168.50.2", "192.168.100.1"},
		node2: {"pod4", "10.244.1.11:80", "192.168.60.2", "192.168.100.2"},
	}
	for nd, l := range local {
		waitIPVSOn(t, nd, "LB virtual server with the local endpoint only", func(s string) bool {
			b := vsBlock(s, lb)
			return strings.Contains(b, l.ep) && strings.Count(b, "Masq") == 1
		})
		for _, target := range []string{lb, l.ip + ":" + np} {
			pods, clients := answersFrom(t, nd, "client", "tcp", target, 4)
			if !slices.Equal(pods, []string{l.pod}) || !slices.Equal(clients, []string{l.client}) {
				t.Errorf("%s via %s: pods %v saw clients %v; want only %s, seeing %s", target, nd.Name, pods, clients, l.pod, l.client)
			}
		}
	}

	// Only node-2 has an endpoint now.
	setEndpoints(t, "etp-lb", 80, v1.ProtocolTCP, podEP{"10.244.1.11", "node-2"})
	// (pod1 drains at weight 0 while the test's earlier connections linger.)
	waitIPVSOn(t, node, "node-1 falls back to the remote endpoint for in-cluster clients", func(s string) bool {
		return slices.Equal(activeRS(s, lb), []string{"10.244.1.11"})
	})
	if pods, clients := answersFrom(t, node2, "client", "tcp", lb, 3); !slices.Equal(pods, []string{"pod4"}) || !slices.Equal(clients, []string{"192.168.60.2"}) {
		t.Errorf("via node-2: %v %v", pods, clients)
	}
	// node-1 has none: external traffic is refused, in-cluster traffic still served.
	for _, target := range []string{lb, "192.168.100.1:" + np} {
		if a, err := node.Ask("client", "tcp", target); err == nil {
			t.Errorf("%s via node-1 (no local endpoint) answered %q; external traffic must not be forwarded", target, a)
		}
	}
	if pods, _ := answersFrom(t, node, "pod1", "tcp", lb, 3); !slices.Equal(pods, []string{"pod4"}) {
		t.Errorf("in-cluster client on node-1 to the LB IP: %v, want pod4", pods)
	}

	hc := func(ip string) string { return fmt.Sprintf("http://%s:%d/", ip, svc.Spec.HealthCheckNodePort) }
	if code, n := hcAsk(t, node, hc("192.168.100.1")); code != 503 || n != 0 {
		t.Errorf("node-1 health check %d %d, want 503 0", code, n)
	}
	if code, n := hcAsk(t, node2, hc("192.168.100.2")); code != 200 || n != 1 {
		t.Errorf("node-2 health check %d %d, want 200 1", code, n)
	}
	// The endpoint moves to node-1: the health checks flip.
	setEndpoints(t, "etp-lb", 80, v1.ProtocolTCP, podEP{"10.244.0.13", "node-1"})
	if err := waitFor(15*time.Second, func() bool {
		c1, _ := hcAsk(t, node, hc("192.168.100.1"))
		c2, _ := hcAsk(t, node2, hc("192.168.100.2"))
		return c1 == 200 && c2 == 503
	}); err != nil {
		t.Error("health checks did not flip after the endpoint moved to node-1")
	}
	if pods, clients := answersFrom(t, node, "client", "tcp", lb, 3); !slices.Equal(pods, []string{"pod3"}) || !slices.Equal(clients, []string{"192.168.50.2"}) {
		t.Errorf("after the move, via node-1: %v %v", pods, clients)
	}
}
