package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// The node's proxy switches, as docs/migration.md does them (the pods' delete and
// create become kill and start in the VM; the kernel state is what matters).

// wipeNode stops ipvs-proxier and removes every proxy's state: a fresh node.
func wipeNode(t *testing.T) {
	t.Helper()
	if _, err := node.MustExec(`kill $(cat /tmp/daemon.pid) 2>/dev/null; sleep 1; ipvsadm -C; ip link del kube-ipvs0 2>/dev/null;
for t in nat filter mangle; do for c in iptables ip6tables; do $c -t $t -F; $c -t $t -X; done; done; ipset destroy
for f in ip ip6; do nft delete table $f ipvs-proxier 2>/dev/null; done; true`); err != nil {
		t.Fatal(err)
	}
}

// startKubeProxy starts stock kube-proxy in mode ("ipvs" or "iptables").
func startKubeProxy(t *testing.T, mode string) {
	t.Helper()
	if _, err := node.MustExec("test -x /usr/local/bin/kube-proxy"); err != nil {
		t.Skipf("no kube-proxy binary in the node: %v", err)
	}
	cmd := "sed 's/^mode: .*/mode: " + mode + "/' /" + harness.StockKubeProxyDir + "/config.conf > /tmp/kp.conf && " +
		"/usr/local/bin/kube-proxy --config=/tmp/kp.conf >> /tmp/kube-proxy.log 2>&1 & echo $! > /tmp/kube-proxy.pid"
	if _, err := node.MustExec(cmd); err != nil {
		t.Fatal(err)
	}
}

func stopKubeProxy(t *testing.T) {
	t.Helper()
	if _, err := node.MustExec("kill $(cat /tmp/kube-proxy.pid); sleep 1"); err != nil {
		t.Fatal(err)
	}
}

func stopDaemon(t *testing.T) {
	t.Helper()
	if _, err := node.MustExec("kill $(cat /tmp/daemon.pid); sleep 1"); err != nil {
		t.Fatal(err)
	}
}

// startDaemon starts ipvs-proxier as deploy/ runs it and waits for its first sync.
func startDaemon(t *testing.T) { t.Helper(); startDaemonWith(t, "") }

// startDaemonWith starts ipvs-proxier with args added to deploy/'s, and waits for its
// first sync.
func startDaemonWith(t *testing.T, args string) {
	t.Helper()
	count := func() int {
		out, _ := node.MustExec("grep -c '\"Running\"' /tmp/daemon.log || true")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n
	}
	before := count()
	if _, err := node.MustExec("sh /start-daemon.sh " + args); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(60*time.Second, func() bool {
		r, err := node.Get("", "http://127.0.0.1:10256/readyz")
		return count() > before && err == nil && r.Code == 200
	}); err != nil {
		t.Fatal("ipvs-proxier never became ready")
	}
}

// restoreNode leaves the node to ipvs-proxier whatever a test did: kube-proxy and
// kube-router stopped, their leftovers gone, the daemon running.
func restoreNode(t *testing.T) {
	_, _ = node.MustExec(`kill $(cat /tmp/kube-proxy.pid) 2>/dev/null; kill $(cat ` + benchkit.KubeRouter.PIDFile + `) 2>/dev/null; sleep 1; /usr/local/bin/ipvs-proxier cleanup --leftovers-only;
kill -0 $(cat /tmp/daemon.pid) 2>/dev/null || sh /start-daemon.sh`)
}

func iptablesSave(t *testing.T) string {
	t.Helper()
	return nodeOut(t, "iptables-save")
}

// TestMigrateFromIptablesMode: kube-proxy's iptables mode serves a request loop; the
// node switches to ipvs-proxier and the iptables-mode leftovers are removed; then it
// rolls back to kube-proxy's iptables mode. Failed requests are counted on both paths.
func TestMigrateFromIptablesMode(t *testing.T) {
	requireEnv(t)
	harness.RequireAll(t, "the takeover from kube-proxy IPVS mode (TestTakeoverFromKubeProxy)")
	svc := createService(t, service("mig-ipt"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	vip := svc.Spec.ClusterIP + ":80"
	// A Service without endpoints: iptables mode REJECTs it in filter KUBE-SERVICES,
	// a rule that would outlive the switch if the leftovers stayed.
	empty := createService(t, service("mig-empty"), 80, v1.ProtocolTCP)
	emptyVIP := empty.Spec.ClusterIP + ":80"

	t.Cleanup(func() { restoreNode(t) })
	wipeNode(t)
	startKubeProxy(t, "iptables")
	if err := waitFor(60*time.Second, func() bool {
		_, err := node.Ask("client", "tcp", vip)
		return err == nil && strings.Contains(iptablesSave(t), "-d "+empty.Spec.ClusterIP+"/32 -p tcp -m comment --comment \"default/mig-empty:p has no endpoints\"")
	}); err != nil {
		log, _ := node.MustExec("tail -20 /tmp/kube-proxy.log")
		t.Fatalf("kube-proxy (iptables mode) never served the Service:\n%s\nkube-proxy log:\n%s", iptablesSave(t), log)
	}
	if out := ipvsadm(t); strings.Contains(out, vip) {
		t.Fatalf("IPVS state under iptables mode:\n%s", out)
	}

	stop := node.RequestLoop(t.Logf, "client", vip)
	time.Sleep(2 * time.Second)
	stopKubeProxy(t)
	startDaemon(t)
	if out, err := node.MustExec("/usr/local/bin/ipvs-proxier cleanup --leftovers-only"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("cleanup --leftovers-only:\n%s", out)
	}
	time.Sleep(3 * time.Second)
	ok, failed := stop()
	t.Logf("requests during the switch from iptables mode: %d ok, %d failed", ok, failed)
	// The issue asks for zero failures on the IPVS takeover and "as few as possible" on
	// the iptables paths: zero in most runs, one in 2,211 seen once (rollback); allow 0.5%.
	if failed*200 > ok || ok < 5 {
		t.Errorf("switch from iptables mode: %d failed, %d ok", failed, ok)
	}
	saved := iptablesSave(t)
	for _, gone := range []string{"KUBE-SVC-", "KUBE-SEP-", "KUBE-EXTERNAL-SERVICES", "mig-empty:p has no endpoints"} {
		if strings.Contains(saved, gone) {
			t.Errorf("iptables-mode leftover %q after cleanup --leftovers-only:\n%s", gone, saved)
		}
	}
	if !strings.Contains(vsBlock(ipvsadm(t), vip), "10.244.0.12") {
		t.Errorf("ipvs-proxier did not program the Service:\n%s", ipvsadm(t))
	}
	// The Service that had no endpoints at the switch works once it has some.
	setEndpoints(t, "mig-empty", 80, v1.ProtocolTCP, podEP{"10.244.0.13", "node-1"})
	waitIPVS(t, "mig-empty endpoints", func(s string) bool { return strings.Contains(vsBlock(s, emptyVIP), "10.244.0.13") })
	if a, err := node.Ask("client", "tcp", emptyVIP); err != nil || !strings.HasPrefix(a, "pod3") {
		t.Errorf("mig-empty after it got endpoints: %q %v", a, err)
	}

	// Rollback: kube-proxy's iptables mode starts again, then our state goes, keeping the
	// chains both use (kube-proxy rewrote them already).
	stop = node.RequestLoop(t.Logf, "client", vip)
	time.Sleep(2 * time.Second)
	stopDaemon(t)
	startKubeProxy(t, "iptables")
	if err := waitFor(60*time.Second, func() bool { return strings.Contains(iptablesSave(t), "KUBE-SVC-") }); err != nil {
		t.Fatal("kube-proxy never synced after the rollback")
	}
	out, err := node.MustExec("/usr/local/bin/ipvs-proxier cleanup --keep-shared-chains")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup --keep-shared-chains:\n%s", out)
	time.Sleep(3 * time.Second)
	ok, failed = stop()
	t.Logf("requests during the rollback to iptables mode: %d ok, %d failed", ok, failed)
	if failed*200 > ok || ok < 5 {
		t.Errorf("rollback to iptables mode: %d failed, %d ok", failed, ok)
	}
	if out := ipvsadm(t); strings.Contains(out, vip) {
		t.Errorf("virtual servers left after the rollback:\n%s", out)
	}
	if out, _, _ := node.Exec("ip link show kube-ipvs0; ipset list -n"); strings.Contains(out, "kube-ipvs0:") || strings.Contains(out, "KUBE-") {
		t.Errorf("dummy interface or sets left after the rollback:\n%s", out)
	}
	if _, err := node.Ask("client", "tcp", vip); err != nil {
		t.Errorf("kube-proxy's iptables mode does not serve after the rollback: %v", err)
	}

	// Back to ipvs-proxier for the tests that follow.
	stopKubeProxy(t)
	if _, err := node.MustExec("/usr/local/bin/ipvs-proxier cleanup --leftovers-only"); err != nil {
		t.Fatal(err)
	}
	startDaemon(t)
}

// TestMigrateFromNftablesMode: kube-proxy's nftables mode serves a request loop; it
// stops and ipvs-proxier starts. After its first sync the daemon deletes kube-proxy's
// tables (ip and ip6 kube-proxy), as kube-proxy's IPVS mode does at start: their DNAT
// rules come before IPVS and would go on serving their last sync's endpoints. Failed
// requests are counted; an endpoint change after the switch is served as programmed.
func TestMigrateFromNftablesMode(t *testing.T) {
	requireEnv(t)
	harness.RequireAll(t, "the takeover from kube-proxy IPVS mode (TestTakeoverFromKubeProxy)")
	svc := createService(t, service("mig-nft"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	vip := svc.Spec.ClusterIP + ":80"
	tables := func() string { return nodeOut(t, "nft list tables") }

	t.Cleanup(func() { restoreNode(t) })
	wipeNode(t)
	startKubeProxy(t, "nftables")
	if err := waitFor(60*time.Second, func() bool {
		_, err := node.Ask("client", "tcp", vip)
		return err == nil && strings.Contains(tables(), "table ip kube-proxy")
	}); err != nil {
		log, _ := node.MustExec("tail -20 /tmp/kube-proxy.log")
		t.Fatalf("kube-proxy (nftables mode) never served the Service:\n%s\nkube-proxy log:\n%s", tables(), log)
	}

	stop := node.RequestLoop(t.Logf, "client", vip)
	time.Sleep(2 * time.Second)
	stopKubeProxy(t) // its tables stay, as kube-proxy leaves them on exit
	startDaemon(t)
	if err := waitFor(30*time.Second, func() bool { return !strings.Contains(tables(), "kube-proxy") }); err != nil {
		t.Errorf("kube-proxy's nftables tables left after the daemon's first sync:\n%s", tables())
	}
	time.Sleep(3 * time.Second)
	ok, failed := stop()
	t.Logf("requests during the switch from nftables mode: %d ok, %d failed", ok, failed)
	if failed*200 > ok || ok < 5 {
		t.Errorf("switch from nftables mode: %d failed, %d ok", failed, ok)
	}
	// kube-proxy's stale DNAT would still send to pod1 and pod2.
	setEndpoints(t, "mig-nft", 80, v1.ProtocolTCP, podEP{"10.244.0.13", "node-1"})
	waitIPVS(t, "mig-nft's new endpoint", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.13") })
	for i := range 10 {
		if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod3") {
			t.Fatalf("request %d after the endpoint change: %q %v\n%s", i, a, err, tables())
		}
	}
	out, err := node.MustExec("/usr/local/bin/ipvs-proxier cleanup --leftovers-only")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kube-proxy nftables-mode tables deleted: 0") {
		t.Errorf("cleanup --leftovers-only after the switch:\n%s", out)
	}
}

// startKubeRouter starts kube-router's service proxy as the benchmarks do
// (benchkit.KubeRouter).
func startKubeRouter(t *testing.T) {
	t.Helper()
	if _, err := node.MustExec("test -x /usr/local/bin/kube-router"); err != nil {
		t.Skipf("no kube-router binary in the node: %v", err)
	}
	if _, err := node.MustExec(benchkit.KubeRouter.Start); err != nil {
		t.Fatal(err)
	}
}

// stopKubeRouter stops kube-router, which leaves everything it programmed.
func stopKubeRouter(t *testing.T) {
	t.Helper()
	if _, err := node.MustExec("kill $(cat " + benchkit.KubeRouter.PIDFile + "); sleep 1; rm -f " + benchkit.KubeRouter.PIDFile); err != nil {
		t.Fatal(err)
	}
}

// kubeRouterLeftovers lists what of kube-router's service proxy is on the node: its
// dummy interface, ipsets, chains, masquerade rule, policy rule and table-78 route.
func kubeRouterLeftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	if out := nodeOut(t, "ip -o link show kube-dummy-if 2>/dev/null || true"); strings.TrimSpace(out) != "" {
		left = append(left, "kube-dummy-if: "+out)
	}
	if out := nodeOut(t, "ipset list -n | grep kube-router || true"); strings.TrimSpace(out) != "" {
		left = append(left, "ipsets: "+out)
	}
	for _, c := range []string{"iptables-save", "ip6tables-save"} {
		for _, l := range strings.Split(nodeOut(t, c), "\n") {
			if strings.Contains(l, "KUBE-ROUTER") || strings.Contains(l, `--vmethod MASQ -m comment --comment ""`) {
				left = append(left, c+": "+l)
			}
		}
	}
	for _, f := range []string{"-4", "-6"} {
		if out := nodeOut(t, "ip "+f+" rule | grep -E '^32765:.*lookup (79|external_ip)' || true"); strings.TrimSpace(out) != "" {
			left = append(left, "ip "+f+" rule: "+out)
		}
		if out := nodeOut(t, "ip "+f+" route show table 78 2>/dev/null | grep default || true"); strings.TrimSpace(out) != "" {
			left = append(left, "ip "+f+" route table 78: "+out)
		}
	}
	return left
}

// TestMigrateFromKubeRouter: kube-router's service proxy serves a request loop; it
// stops (leaving everything), ipvs-proxier starts, and `cleanup --leftovers-only`
// runs. Failed requests are counted, none of kube-router's objects remain (the daemon
// removes them after its first sync, the cleanup finds the rest), and a later endpoint
// change is served as programmed.
func TestMigrateFromKubeRouter(t *testing.T) {
	requireEnv(t)
	harness.RequireAll(t, "the takeover from kube-proxy IPVS mode (TestTakeoverFromKubeProxy)")
	svc := createService(t, service("mig-kr"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	vip := svc.Spec.ClusterIP + ":80"

	t.Cleanup(func() { restoreNode(t) })
	wipeNode(t)
	startKubeRouter(t)
	if err := waitFor(90*time.Second, func() bool {
		_, err := node.Ask("client", "tcp", vip)
		return err == nil && strings.Contains(nodeOut(t, "ip -o addr show kube-dummy-if 2>/dev/null || true"), svc.Spec.ClusterIP+"/32")
	}); err != nil {
		log, _ := node.MustExec("tail -30 /tmp/kube-router.log")
		t.Fatalf("kube-router never served the Service:\n%s\nkube-router log:\n%s", nodeOut(t, "ipvsadm -Ln"), log)
	}
	if left := kubeRouterLeftovers(t); len(left) < 4 {
		t.Logf("kube-router programmed less than expected (dummy, ipsets, chains, rules):\n%s", strings.Join(left, "\n"))
	}

	stop := node.RequestLoop(t.Logf, "client", vip)
	time.Sleep(2 * time.Second)
	stopKubeRouter(t) // everything it programmed stays, as it leaves it on SIGTERM
	startDaemon(t)
	out, err := node.MustExec("/usr/local/bin/ipvs-proxier cleanup --leftovers-only")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup --leftovers-only after the switch:\n%s", out)
	time.Sleep(3 * time.Second)
	ok, failed := stop()
	t.Logf("requests during the switch from kube-router: %d ok, %d failed", ok, failed)
	if failed*200 > ok || ok < 5 {
		t.Errorf("switch from kube-router: %d failed, %d ok", failed, ok)
	}
	if left := kubeRouterLeftovers(t); len(left) > 0 {
		t.Errorf("kube-router's leftovers after the switch and the cleanup:\n%s", strings.Join(left, "\n"))
	}
	if a := nodeOut(t, "ip -o addr show kube-ipvs0"); !strings.Contains(a, svc.Spec.ClusterIP+"/32") {
		t.Errorf("the ClusterIP is not on our dummy:\n%s", a)
	}

	// A virtual server kube-router left would keep sending to pod1 and pod2 (ours keeps
	// them at weight 0 while their connections drain: no new one goes there).
	setEndpoints(t, "mig-kr", 80, v1.ProtocolTCP, podEP{"10.244.0.13", "node-1"})
	waitIPVS(t, "mig-kr's new endpoint", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.13") })
	for i := range 10 {
		if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod3") {
			t.Fatalf("request %d after the endpoint change: %q %v\n%s", i, a, err, nodeOut(t, "ipvsadm -Ln"))
		}
	}
}
