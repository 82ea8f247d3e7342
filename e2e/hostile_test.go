package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// waitWarning waits for a Warning Event with reason on the default-namespace object name.
func waitWarning(t *testing.T, name, reason string, message func(string) bool) {
	t.Helper()
	if err := waitFor(30*time.Second, func() bool {
		evs, err := cp.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == reason && e.Type == v1.EventTypeWarning && message(e.Message) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Errorf("no %s Warning Event on %s", reason, name)
	}
}

// TestConflictingExternalIP: two Services on one external IP:port, the loser without
// endpoints and created first. The winner (first by name) serves every request: the
// loser's KUBE-NO-ENDPOINTS entry would REJECT them. The loser gets a Warning naming it.
func TestConflictingExternalIP(t *testing.T) {
	requireEnv(t)
	const vip = "203.0.113.30:80"
	spec := v1.ServiceSpec{ExternalIPs: []string{"203.0.113.30"}}
	createService(t, service("conflict-b", *spec.DeepCopy()), 80, v1.ProtocolTCP)
	waitIPVS(t, "loser alone", func(s string) bool { return strings.Contains(s, "TCP  "+vip) })
	createService(t, service("conflict-a", *spec.DeepCopy()), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	waitIPVS(t, "winner", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.11") })
	waitServing(t, "client", "tcp", vip)
	for i := range 20 {
		if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod1") {
			t.Fatalf("request %d through the contested VIP: %q %v\n%s", i, a, err, ipsetList(t, "KUBE-NO-ENDPOINTS"))
		}
	}
	if out, code, _ := node.Exec("ipset test KUBE-NO-ENDPOINTS 203.0.113.30,tcp:80"); code == 0 {
		t.Errorf("the winner's VIP:port is in KUBE-NO-ENDPOINTS: %s", out)
	}
	waitWarning(t, "conflict-b", "VirtualServerConflict", func(m string) bool { return strings.Contains(m, "default/conflict-a") })
}

// TestSourceRangesOtherFamily: an IPv4 LoadBalancer whose ranges also hold "::/0" keeps
// its IPv4 firewall (the /0 of the other family once removed it).
func TestSourceRangesOtherFamily(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("lb-mixed", v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		LoadBalancerSourceRanges: []string{"192.168.50.2/32", "::/0"}}), 80, v1.ProtocolTCP, podEP{"10.244.0.12", "node-1"})
	setLBIngress(t, svc, "203.0.113.21")
	checkSourceRange(t, "203.0.113.21:80")
}

func ipsetList(t *testing.T, set string) string {
	t.Helper()
	out, _ := node.MustExec("ipset list " + set)
	return out
}

// TestRestartPrunesExternalIPOnNodeIP: an external IP equal to the node's IP (outside
// the NodePort range), its Service deleted while the daemon was down: the restarted
// daemon prunes the virtual server, because our KUBE-EXTERNAL-IP set names it.
func TestRestartPrunesExternalIPOnNodeIP(t *testing.T) {
	requireEnv(t)
	const vip = "10.0.2.15:8081"
	createService(t, service("ext-node-ip", v1.ServiceSpec{ExternalIPs: []string{"10.0.2.15"}}),
		8081, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	waitIPVS(t, "external IP on the node IP", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.11") })
	stopDaemon(t)
	ctx := context.Background()
	_ = cp.Admin.CoreV1().Services("default").Delete(ctx, "ext-node-ip", metav1.DeleteOptions{})
	_ = cp.Admin.DiscoveryV1().EndpointSlices("default").Delete(ctx, "ext-node-ip-1", metav1.DeleteOptions{})
	startDaemon(t)
	waitIPVS(t, "stale virtual server pruned after the restart", func(s string) bool { return !strings.Contains(s, "TCP  "+vip) })
}

// TestNodePortAddressesPrimary: with `nodePortAddresses: [primary]` NodePorts listen on
// the Node's InternalIP only, not on the node's other addresses (the daemon once ignored
// the keyword and opened every address).
func TestNodePortAddressesPrimary(t *testing.T) {
	requireEnv(t)
	runDaemonVariant(t, "primary", "(cat /var/lib/kube-proxy/config.conf; echo 'nodePortAddresses: [primary]') > /tmp/primary/config.conf")
	svc := createService(t, service("np-primary", v1.ServiceSpec{Type: v1.ServiceTypeNodePort}),
		80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	np := strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
	waitIPVS(t, "NodePort on the primary IP", func(s string) bool { return strings.Contains(vsBlock(s, node.IP+":"+np), "10.244.0.11") })
	if out := ipvsadm(t); strings.Contains(out, harness.NodeIP+":"+np) {
		t.Errorf("NodePort also on the non-primary %s:\n%s", harness.NodeIP, out)
	}
}

// TestExternalIPCannotTakeClusterIP: a Service that sorts first and names another
// Service's ClusterIP as its external IP does not take it: the ClusterIP keeps forwarding
// to its own Service's pod, and the Warning lands on the Service that named it.
func TestExternalIPCannotTakeClusterIP(t *testing.T) {
	requireEnv(t)
	victim, vip := createProgrammed(t, service("zz-victim"), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	createService(t, service("a-hijack", v1.ServiceSpec{ExternalIPs: []string{victim.Spec.ClusterIP}}), 80, v1.ProtocolTCP,
		podEP{"10.244.0.12", "node-1"})
	waitWarning(t, "a-hijack", "VirtualServerConflict", func(m string) bool { return strings.Contains(m, "default/zz-victim") })
	if block := vsBlock(ipvsadm(t), vip); !strings.Contains(block, "10.244.0.11:80") || strings.Contains(block, "10.244.0.12:80") {
		t.Fatalf("%s forwards to\n%s\nwant only the victim's pod 10.244.0.11", vip, block)
	}
	for i := range 10 {
		if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod1") {
			t.Fatalf("request %d to the victim's ClusterIP %s: %q %v", i, vip, a, err)
		}
	}
}

// TestExternalIPInServiceCIDR: an external IP inside the service CIDR that no Service
// was allocated answers the node's own connections (kube-proxy serves it), instead of
// the unallocated-ClusterIP check's REJECT.
func TestExternalIPInServiceCIDR(t *testing.T) {
	requireEnv(t)
	const vip = "10.96.200.200:80"
	createService(t, service("ext-in-cidr", v1.ServiceSpec{ExternalIPs: []string{"10.96.200.200"}}), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"})
	waitIPVS(t, "external IP", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.11:80") })
	waitServing(t, "", "tcp", vip)
	for _, ns := range []string{"", "client"} {
		if a, err := node.Ask(ns, "tcp", vip); err != nil || !strings.HasPrefix(a, "pod1") {
			t.Errorf("from netns %q to %s: %q %v", ns, vip, a, err)
		}
	}
}

// TestCleanupValidatesFirst: `cleanup` with a --dummy-device that names the loopback or
// the node's real interface (directly, or through kube-proxy's --cleanup) fails before
// any change: the daemon's virtual servers, sets, chains and addresses are as they were
// (it once deleted every virtual server on that device's addresses and our sets and
// chains, and only then said the device was no dummy).
func TestCleanupValidatesFirst(t *testing.T) {
	requireEnv(t)
	createProgrammed(t, service("cleanup-kept"), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	state := func() string {
		return nodeOut(t, "ipvsadm -Ln; ipset list -n; iptables-save | grep -c KUBE-; nft list tables; ip -o addr show kube-ipvs0 | wc -l")
	}
	before := state()
	for _, args := range []string{"cleanup --dummy-device lo", "cleanup --dummy-device eth0",
		"cleanup --dummy-device eth0 --iptables-mode-leftovers", "cleanup --leftovers-only --dummy-device eth0",
		"cleanup --ipvs-exclude-cidrs 10.0.0.0/33", "--cleanup --dummy-device eth0"} {
		out, code, err := node.Exec("/usr/local/bin/ipvs-proxier " + args)
		if err != nil || code == 0 || !strings.Contains(out, "nothing was changed") {
			t.Errorf("ipvs-proxier %s: exit %d, %v:\n%s", args, code, err, out)
		}
	}
	if after := state(); after != before {
		t.Errorf("the node changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestExternalIPsGateOff: with kube-proxy's AllowServiceExternalIPs gate off in
// config.conf's featureGates, a Service's externalIPs are neither bound nor programmed
// and answer nothing, as kube-proxy v1.37 leaves them (pkg/proxy/serviceport.go, the
// hardening against CVE-2020-8554); its ClusterIP still serves.
func TestExternalIPsGateOff(t *testing.T) {
	requireEnv(t)
	runDaemonVariant(t, "gate", "(cat /var/lib/kube-proxy/config.conf; printf 'featureGates:\\n  AllowServiceExternalIPs: false\\n') > /tmp/gate/config.conf")
	_, vip := createProgrammed(t, service("ext-gated", v1.ServiceSpec{ExternalIPs: []string{"203.0.113.44"}}),
		80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod1") {
		t.Errorf("through the ClusterIP: %q %v", a, err)
	}
	if out := ipvsadm(t); strings.Contains(out, "203.0.113.44") {
		t.Errorf("the external IP is programmed with the gate off:\n%s", out)
	}
	if out := nodeOut(t, "ip -o addr show kube-ipvs0; ip route show table local proto 210"); strings.Contains(out, "203.0.113.44") {
		t.Errorf("the external IP is bound with the gate off:\n%s", out)
	}
	if a, err := node.Ask("client", "tcp", "203.0.113.44:80"); err == nil {
		t.Errorf("the external IP answered with the gate off: %q", a)
	}
}
