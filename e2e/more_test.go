package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestExternalIPs: an external IP is bound on the node and serves like the ClusterIP.
func TestExternalIPs(t *testing.T) {
	requireEnv(t)
	createService(t, service("ext", v1.ServiceSpec{ExternalIPs: []string{"203.0.113.10"}}),
		80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	waitIPVS(t, "external IP", func(s string) bool {
		return strings.Contains(s, "TCP  203.0.113.10:80") && strings.Contains(vsBlock(s, "203.0.113.10:80"), "10.244.0.11")
	})
	if a, err := node.Ask("client", "tcp", "203.0.113.10:80"); err != nil || !strings.HasPrefix(a, "pod1") {
		t.Errorf("through the external IP: %q %v", a, err)
	}
}

// TestLoadBalancerSourceRanges: an LB status IP serves the allowed source and drops the other.
func TestLoadBalancerSourceRanges(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("lb", v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		LoadBalancerSourceRanges: []string{"192.168.50.2/32"}}), 80, v1.ProtocolTCP, podEP{"10.244.0.12", "node-1"})
	setLBIngress(t, svc, "203.0.113.20")
	checkSourceRange(t, "203.0.113.20:80")
}

// checkSourceRange waits for pod2 behind the LoadBalancer IP lb and checks that the
// client's 192.168.50.2 (inside the Service's range) reaches it and 192.168.50.3 does not.
func checkSourceRange(t *testing.T, lb string) {
	t.Helper()
	waitIPVS(t, "LB IP", func(s string) bool { return strings.Contains(vsBlock(s, lb), "10.244.0.12") })
	if a, err := node.AskFrom("client", "tcp", "192.168.50.2", lb); err != nil || !strings.HasPrefix(a, "pod2") {
		t.Errorf("allowed source: %q %v", a, err)
	}
	if a, err := node.AskFrom("client", "tcp", "192.168.50.3", lb); err == nil {
		t.Errorf("denied source got through: %q", a)
	}
}

// TestInternalTrafficPolicyLocal: ITP=Local uses only this node's endpoint.
func TestInternalTrafficPolicyLocal(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("itp", v1.ServiceSpec{InternalTrafficPolicy: ptr.To(v1.ServiceInternalTrafficPolicyLocal)}),
		80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-2"})
	vip := svc.Spec.ClusterIP + ":80"
	waitIPVS(t, "ITP=Local", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.11") })
	if got := answers(t, "client", "tcp", vip, 4); len(got) != 1 || got[0] != "pod1" {
		t.Errorf("answers %v, want only the local pod1", got)
	}
}

// TestSessionAffinity: ClientIP affinity sticks per source.
func TestSessionAffinity(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("sticky", v1.ServiceSpec{SessionAffinity: v1.ServiceAffinityClientIP}),
		80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"}, podEP{"10.244.0.13", "node-1"})
	vip := svc.Spec.ClusterIP + ":80"
	waitIPVS(t, "affinity", func(s string) bool {
		return strings.Contains(s, vip+" rr persistent 10800") && strings.Contains(vsBlock(s, vip), "10.244.0.13")
	})
	for _, src := range []string{"192.168.50.2", "192.168.50.3"} {
		first := ""
		for i := range 4 {
			a, err := node.AskFrom("client", "tcp", src, vip)
			if err != nil {
				t.Fatal(err)
			}
			if name := strings.Fields(a)[0]; i == 0 {
				first = name
			} else if name != first {
				t.Errorf("source %s: %s then %s", src, first, name)
			}
		}
	}
}

// TestDaemonRestartNoFailures: restarting the daemon in the middle of a request loop
// fails no request — the kernel state is adopted, never flushed.
func TestDaemonRestartNoFailures(t *testing.T) {
	requireEnv(t)
	_, vip := createProgrammed(t, service("restart"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	waitServing(t, "client", "tcp", vip)
	stop := node.RequestLoop(t.Logf, "client", vip)
	time.Sleep(2 * time.Second)
	t.Logf("%s restarting", time.Now().Format("15:04:05.000"))
	if _, err := node.MustExec("kill $(cat /tmp/daemon.pid); sleep 1; sh /start-daemon.sh"); err != nil {
		t.Fatal(err)
	}
	// Wait for the new process to sync (it logs "Running"), then keep the loop going.
	if err := waitFor(60*time.Second, func() bool {
		out, _ := node.MustExec("grep -c Running /tmp/daemon.log")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n >= 2
	}); err != nil {
		t.Fatal("restarted daemon never ran")
	}
	time.Sleep(3 * time.Second)
	ok, failed := stop()
	t.Logf("requests during the restart: %d ok, %d failed", ok, failed)
	if failed != 0 || ok < 5 {
		t.Errorf("%d failed, %d ok", failed, ok)
	}
}

// TestDriftRepairedWithinSyncPeriod: `ipvsadm -C` and `ipset flush` by hand are repaired
// by the next full sync (syncPeriod 30 s in deploy/).
func TestDriftRepairedWithinSyncPeriod(t *testing.T) {
	requireEnv(t)
	svc, vip := createProgrammed(t, service("drift"), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	if _, err := node.MustExec("ipvsadm -C && " + setFlush("KUBE-CLUSTER-IP")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := waitFor(45*time.Second, func() bool {
		out, _ := node.MustExec("ipvsadm -Ln; " + setList("KUBE-CLUSTER-IP"))
		return strings.Contains(vsBlock(out, vip), "10.244.0.11") && strings.Contains(out, member(svc.Spec.ClusterIP, "tcp", 80))
	}); err != nil {
		t.Fatal("drift not repaired within 45 s")
	}
	t.Logf("repaired after %v", time.Since(start).Round(time.Second))
	if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod1") {
		t.Errorf("traffic after repair: %q %v", a, err)
	}
}
