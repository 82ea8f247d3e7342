package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestSwitchRulesBackend: restarting node-1's daemon on the other rules backend, and back,
// in the middle of a request loop fails no request; after each switch the node holds only
// the new backend's rules and sets (the daemon removes the old ones once its first sync is
// done).
func TestSwitchRulesBackend(t *testing.T) {
	requireEnv(t)
	_, vip := createProgrammed(t, service("switch"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	waitServing(t, "client", "tcp", vip)
	here, other := "iptables", "nftables"
	if nftMode() {
		here, other = other, here
	}
	t.Cleanup(func() { _, _ = node.MustExec("kill $(cat /tmp/daemon.pid); sleep 1; sh /start-daemon.sh") })
	for _, to := range []string{other, here} {
		stop := node.RequestLoop(t.Logf, "client", vip)
		time.Sleep(2 * time.Second)
		before := countInLog(t, "Removed the other rules backend")
		t.Logf("%s restarting on %s", time.Now().Format("15:04:05.000"), to)
		if _, err := node.MustExec("kill $(cat /tmp/daemon.pid); sleep 1; sh /start-daemon.sh --rules-backend " + to); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(90*time.Second, func() bool { return countInLog(t, "Removed the other rules backend") > before }); err != nil {
			out, _ := node.MustExec("tail -20 /tmp/daemon.log")
			t.Fatalf("the daemon on %s never removed the other backend's objects:\n%s", to, out)
		}
		time.Sleep(3 * time.Second)
		ok, failed := stop()
		t.Logf("requests while switching to %s: %d ok, %d failed", to, ok, failed)
		if failed != 0 || ok < 5 {
			t.Errorf("switching to %s: %d failed, %d ok", to, failed, ok)
		}
		out := nodeOut(t, "echo ipsets: $(ipset list -n | grep -c '^KUBE-'); echo chains: $(iptables-save -t nat | grep -c '^:KUBE-SERVICES'); "+
			"echo tables: $(nft list tables | grep -c ipvs-proxier)")
		want := "ipsets: 0\nchains: 0\ntables: 2\n"
		if to == "iptables" {
			want = "tables: 0\n"
		}
		for _, l := range strings.SplitAfter(want, "\n") {
			if l != "" && !strings.Contains(out, l) {
				t.Errorf("after the switch to %s, want %q:\n%s", to, strings.TrimSpace(l), out)
			}
		}
		if to == "iptables" && (strings.Contains(out, "ipsets: 0\n") || strings.Contains(out, "chains: 0\n")) {
			t.Errorf("after the switch to iptables, no sets or chains of ours:\n%s", out)
		}
	}
}

// countInLog counts the daemon log's lines holding s on node-1.
func countInLog(t *testing.T, s string) int {
	out, _ := node.MustExec("grep -c '" + s + "' /tmp/daemon.log")
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// TestTakeoverFromKubeProxyToNftables: stock kube-proxy's IPVS mode serves a request
// loop; it is stopped and ours started with --rules-backend nftables. No request fails,
// and once our first sync is done nothing of kube-proxy's rules is left: no KUBE- ipset,
// no KUBE- chain in iptables, our nftables table in place. It runs in `make
// e2e-nftables` only (the iptables run has TestTakeoverFromKubeProxy).
func TestTakeoverFromKubeProxyToNftables(t *testing.T) {
	requireEnv(t)
	if !nftMode() {
		t.Skip("runs in make e2e-nftables")
	}
	_, vip := createProgrammed(t, service("kp-to-nft"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	t.Cleanup(func() { restoreNode(t) })
	wipeNode(t)
	startKubeProxy(t, "ipvs")
	if err := waitFor(90*time.Second, func() bool {
		out, _ := node.MustExec("ipset list KUBE-CLUSTER-IP")
		return strings.Contains(vsBlock(ipvsadm(t), vip), "10.244.0.12") && strings.Contains(out, strings.Replace(vip, ":", ",tcp:", 1))
	}); err != nil {
		log, _ := node.MustExec("tail -30 /tmp/kube-proxy.log")
		t.Fatalf("kube-proxy never programmed the Service:\n%s\nkube-proxy log:\n%s", ipvsadm(t), log)
	}
	warm := node.RequestLoop(nil, "client", vip) // kube-proxy alone, not counted
	time.Sleep(2 * time.Second)
	warm()
	stop := node.RequestLoop(t.Logf, "client", vip)
	time.Sleep(time.Second)
	before := countInLog(t, "Removed the other rules backend")
	stopKubeProxy(t)
	startDaemonWith(t, "--rules-backend nftables")
	if err := waitFor(90*time.Second, func() bool { return countInLog(t, "Removed the other rules backend") > before }); err != nil {
		out, _ := node.MustExec("tail -20 /tmp/daemon.log")
		t.Fatalf("the daemon never removed kube-proxy's iptables rules and ipsets:\n%s", out)
	}
	time.Sleep(3 * time.Second)
	ok, failed := stop()
	t.Logf("requests during the switch from kube-proxy IPVS mode to ours on nftables: %d ok, %d failed", ok, failed)
	if failed != 0 || ok < 5 {
		t.Errorf("%d failed, %d ok", failed, ok)
	}
	out := nodeOut(t, "echo ipsets: $(ipset list -n | grep -c '^KUBE-'); echo chains: $(iptables-save | grep -c '^:KUBE-'); "+
		"echo rules: $(iptables-save | grep -c -- '-j KUBE-'); echo tables: $(nft list tables | grep -c ipvs-proxier)")
	if out != "ipsets: 0\nchains: 0\nrules: 0\ntables: 2\n" {
		t.Errorf("after the switch, want no ipset, chain or jump of kube-proxy's and our two tables:\n%s", out)
	}
	if !strings.Contains(vsBlock(ipvsadm(t), vip), "10.244.0.12") {
		t.Errorf("ipvs-proxier did not keep the Service:\n%s", ipvsadm(t))
	}
}
