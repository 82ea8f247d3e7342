package kubelet

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestSwitchToNftablesREADME: the README's one command that moves the nodes to the
// nftables backend, run as it is printed there, under a request loop: the pod rolls
// (its init container and daemon both read the field), no request fails, and the node
// then holds our nftables table and none of our iptables chains or ipsets. The same
// command with the field taken out moves it back.
func TestSwitchToNftablesREADME(t *testing.T) {
	requireEnv(t)
	harness.RequireAll(t, "the backend switch (TestSwitchRulesBackend)")
	cmd := readmeSwitchCommand(t)
	for _, to := range []string{"nftables", "iptables"} {
		old := waitPodReady(t, 2*time.Minute, nil)
		run := cmd
		if to == "iptables" { // back: the line the command added, removed
			run = strings.Replace(cmd, `sed 's/^    mode: ipvs$/&\n    rulesBackend: nftables/'`, `sed '/^    rulesBackend: nftables$/d'`, 1)
			if run == cmd {
				t.Fatalf("the README's command changed; its reverse is not known:\n%s", cmd)
			}
		}
		stop := node.RequestLoop(t.Logf, "pod1", webTarget(t))
		sh := exec.Command("sh", "-c", run)
		sh.Env = append(os.Environ(), "PATH="+filepath.Dir(bins.Kubectl)+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
		if out, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", run, err, out)
		}
		kubectl(t, "-n", "kube-system", "rollout", "status", "ds/ipvs-proxier", "--timeout=8m")
		p := waitPodReady(t, 5*time.Minute, func(p *v1.Pod) bool { return p.UID != old.UID })
		if err := waitFor(3*time.Minute, func() bool {
			return strings.Contains(podLog(p), "Removed the other rules backend")
		}); err != nil {
			t.Fatalf("the new pod never removed the other backend's objects:\n%s", tail(podLog(p), 3000))
		}
		time.Sleep(3 * time.Second)
		ok, failed := stop()
		t.Logf("switch to %s: %d requests answered, %d failed", to, ok, failed)
		if ok == 0 || failed != 0 {
			t.Errorf("switch to %s: %d answered, %d failed", to, ok, failed)
		}
		out, err := node.MustExec("echo tables: $(nft list tables | grep -c ipvs-proxier); echo sets: $(ipset list -n 2>/dev/null | grep -c '^KUBE-'); " +
			"echo chains: $(iptables-save | grep -c '^:KUBE-SERVICES ')")
		want := map[string]string{"nftables": "tables: 2\nsets: 0\nchains: 0\n", "iptables": "tables: 0\n"}[to]
		if err != nil || !strings.HasPrefix(out, want) {
			t.Errorf("after the switch to %s, want %q first:\n%s %v", to, want, out, err)
		}
		if to == "iptables" && (strings.Contains(out, "sets: 0") || strings.Contains(out, "chains: 0")) {
			t.Errorf("after the switch back, no ipsets or chains of ours:\n%s", out)
		}
	}
}

// readmeSwitchCommand is the README's command that switches the nodes' rules backend.
func readmeSwitchCommand(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "kubectl -n kube-system get cm ipvs-proxier") && strings.Contains(l, "rulesBackend: nftables") {
			return l
		}
	}
	t.Fatal("README.md has no command that switches the rules backend")
	return ""
}

// podLog is one pod's daemon container log as the kubelet keeps it on the node.
func podLog(p *v1.Pod) string {
	out, _ := node.MustExec("cat /var/log/pods/kube-system_" + p.Name + "_" + string(p.UID) + "/ipvs-proxier/*.log 2>/dev/null")
	return out
}
