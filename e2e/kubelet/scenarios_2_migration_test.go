package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestMigrationGuide runs docs/migration.md with kubectl, command for command, from
// kubeadm's own kube-proxy DaemonSet and ConfigMap (testdata/kubeadm-kube-proxy.yaml,
// kube-proxy's image built like ours), for both kube-proxy modes: install reusing
// kube-proxy's config, patch kube-proxy, apply the canary overlay, label the node,
// verify, roll back by unlabelling, under a request loop through a ClusterIP.
func TestMigrationGuide(t *testing.T) {
	requireEnv(t)
	dep := deployCopy(t)
	if _, err := cp.Admin.CoreV1().Services("default").Get(context.Background(), webSvc, metav1.GetOptions{}); err != nil {
		// Run alone (-run TestMigrationGuide): make what the scenarios before leave.
		addPods(t)
		createService(t, webSvc, "10.244.0.12", "10.244.0.13")
		kubectl(t, "apply", "-k", dep)
		waitPodReady(t, 5*time.Minute, nil)
	}
	// Start from a node that runs kube-proxy only: ipvs-proxier removed as the guide's
	// "Removing everything" says (the cleanup run from its image on the node).
	kubectl(t, "delete", "-k", dep, "--wait=true")
	waitNoPod(t, "k8s-app=ipvs-proxier")
	runImage(t, "ghcr.io/ipvs-proxier/ipvs-proxier:v0.1.0", "/usr/local/bin/ipvs-proxier", "cleanup")
	for _, mode := range []string{"ipvs", "iptables"} {
		t.Run(mode, func(t *testing.T) { migrate(t, mode) })
		if t.Failed() {
			return
		}
	}
}

func migrate(t *testing.T, mode string) {
	fixture, err := os.ReadFile("testdata/kubeadm-kube-proxy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kp := filepath.Join(t.TempDir(), "kube-proxy.yaml")
	if err := os.WriteFile(kp, []byte(strings.ReplaceAll(string(fixture), "mode: MODE", "mode: "+mode)), 0o644); err != nil {
		t.Fatal(err)
	}
	step := stepTimer(t)
	kubectl(t, "apply", "-f", kp)
	target := webTarget(t)
	if err := waitFor(5*time.Minute, func() bool { _, err := node.Ask("pod1", "tcp", target); return err == nil }); err != nil {
		out, _ := node.MustExec("tail -20 /var/log/pods/kube-system_kube-proxy-*/kube-proxy/*.log")
		t.Fatalf("kube-proxy (%s mode) does not serve the web Service: %v\n%s", mode, err, out)
	}
	step("kube-proxy serves")
	stop := node.RequestLoop(t.Logf, "pod1", target)
	defer func() {
		ok, failed := stop()
		t.Logf("%s mode: migration and rollback with %d requests answered, %d failed", mode, ok, failed)
		if ok == 0 || failed != 0 {
			t.Errorf("%s mode: %d answered, %d failed", mode, ok, failed)
		}
	}()

	// Step 2: install, reusing kube-proxy's config: both keys of its ConfigMap.
	dep := deployCopy(t)
	cmFile := filepath.Join(dep, "base/configmap.yaml")
	var cm v1.ConfigMap
	b, err := os.ReadFile(cmFile)
	if err != nil || yaml.Unmarshal(b, &cm) != nil {
		t.Fatalf("deploy/base/configmap.yaml: %v", err)
	}
	cm.Data["config.conf"] = kubectl(t, "-n", "kube-system", "get", "cm", "kube-proxy", "-o", `jsonpath={.data.config\.conf}`)
	cm.Data["kubeconfig.conf"] = kubectl(t, "-n", "kube-system", "get", "cm", "kube-proxy", "-o", `jsonpath={.data.kubeconfig\.conf}`)
	if b, err = yaml.Marshal(&cm); err != nil || os.WriteFile(cmFile, b, 0o644) != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", "kube-system", "patch", "ds", "kube-proxy", "--patch-file", filepath.Join(dep, "overlays/canary/kube-proxy-patch.yaml"))
	kubectl(t, "apply", "-k", filepath.Join(dep, "overlays/canary"))

	// Step 3: the canary node.
	kubectl(t, "label", "node", "node-1", "ipvs-proxier.io/enabled=true")
	waitNoPod(t, "k8s-app=kube-proxy")
	step("install, patch, canary, label: kube-proxy gone")
	p := waitPodReady(t, 5*time.Minute, nil)
	t.Log(podTimeline(p))
	// The daemon's own account of its start (log lines carry their time): where the
	// time from the container's start to Ready went.
	t.Log("daemon log, first lines:\n" + firstLines(daemonLog(t), 12))
	step("ipvs-proxier Ready")
	if mode == "iptables" {
		execIn(t, p, "ipvs-proxier", "cleanup", "--leftovers-only")
	}
	// Verify, as the guide lists.
	for _, c := range []struct{ cmd, want string }{
		{"ipvsadm -Ln", strings.TrimSuffix(target, ":80") + ":80 rr"},
		{"ipset list -n", "KUBE-CLUSTER-IP"},
		{"ip addr show kube-ipvs0", strings.TrimSuffix(target, ":80") + "/32"},
		{"wget -q -O- http://127.0.0.1:10256/readyz", `"ready":true`},
	} {
		if out, err := node.MustExec(c.cmd); err != nil || !strings.Contains(out, c.want) {
			t.Errorf("verify %q: want %q in\n%s %v", c.cmd, c.want, out, err)
		}
	}
	// /status once waited on the lock a full sync holds and, under TCG right after a
	// cleanup, outlasted the client's timeout for over a minute in a cold run; it now
	// reads the snapshot the last sync published, and the command is still tried for a
	// while because the pod's exec itself is slow under TCG.
	var status string
	if err := waitFor(4*time.Minute, func() bool {
		status, _ = tryExecIn(p, "ipvs-proxier", "status")
		return strings.Contains(status, "virtual servers")
	}); err != nil {
		t.Errorf("ipvs-proxier status: %v\n%s", err, status)
	}
	if mode == "iptables" {
		if out, _ := node.MustExec("iptables-save -t nat | grep -c -- '-A KUBE-SVC-' || true"); strings.TrimSpace(out) != "0" {
			t.Errorf("iptables mode leftovers after cleanup --leftovers-only: %s KUBE-SVC- rules", strings.TrimSpace(out))
		}
	}

	step("verify")
	// Rollback: unlabel; kube-proxy's pod comes back and serves.
	kubectl(t, "label", "node", "node-1", "ipvs-proxier.io/enabled-")
	waitNoPod(t, "k8s-app=ipvs-proxier")
	step("unlabel: ipvs-proxier gone")
	if err := waitFor(5*time.Minute, func() bool {
		pods, err := cp.Admin.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "k8s-app=kube-proxy"})
		return err == nil && len(pods.Items) == 1 && podReady(&pods.Items[0])
	}); err != nil {
		t.Fatalf("kube-proxy did not come back after the unlabel: %v", err)
	}
	step("kube-proxy Ready again")
	time.Sleep(10 * time.Second) // kube-proxy's first sync, under the loop
	if mode == "iptables" {
		// The guide's rollback to iptables mode: our IPVS state goes once kube-proxy has
		// synced, as the guide checks it (`iptables-save -t nat | grep KUBE-SVC-`), here
		// for the web Service's ClusterIP.
		vip := strings.TrimSuffix(target, ":80")
		if err := waitFor(5*time.Minute, func() bool {
			out, _ := node.MustExec("iptables-save -t nat | grep -- '-A KUBE-SERVICES -d " + vip + "/32' | grep -c KUBE-SVC- || true")
			return strings.TrimSpace(out) != "0"
		}); err != nil {
			t.Fatalf("kube-proxy (iptables mode) never programmed %s after the rollback: %v", vip, err)
		}
		runImage(t, "ghcr.io/ipvs-proxier/ipvs-proxier:v0.1.0", "/usr/local/bin/ipvs-proxier", "cleanup", "--keep-shared-chains")
		time.Sleep(5 * time.Second)
		step("iptables rollback and cleanup")
	}
	// Leave a node with no proxy for the next mode: kube-proxy and the canary removed.
	t.Cleanup(func() {
		kubectl(t, "delete", "-k", filepath.Join(dep, "overlays/canary"), "--ignore-not-found")
		kubectl(t, "delete", "-f", kp, "--ignore-not-found")
		waitNoPod(t, "k8s-app=kube-proxy")
		// Our cleanup also takes kube-proxy's IPVS-mode state (virtual servers on
		// kube-ipvs0, KUBE-* chains and sets) and, with the flag, its iptables-mode chains.
		runImage(t, "ghcr.io/ipvs-proxier/ipvs-proxier:v0.1.0", "/usr/local/bin/ipvs-proxier", "cleanup", "--iptables-mode-leftovers")
		step("removal of kube-proxy and the canary")
	})
}

// waitNoPod waits until no pod matches the selector.
func waitNoPod(t *testing.T, selector string) {
	t.Helper()
	if err := waitFor(3*time.Minute, func() bool {
		pods, err := cp.Admin.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(pods.Items) == 0
	}); err != nil {
		t.Fatalf("pods %s still there: %v", selector, err)
	}
}

// execIn runs a command in the pod's container through the node's containerd: what
// `kubectl exec` does through the kubelet, which the host's apiserver cannot reach here.
func execIn(t *testing.T, p *v1.Pod, args ...string) string {
	t.Helper()
	out, err := tryExecIn(p, args...)
	if err != nil {
		t.Fatalf("exec %v in %s: %v", args, p.Name, err)
	}
	return out
}

func tryExecIn(p *v1.Pod, args ...string) (string, error) {
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	return node.MustExec("ctr -n k8s.io task exec --exec-id e2e-" + time.Now().Format("150405.000000") + " " + id + " " + strings.Join(args, " "))
}

// runImage runs a privileged one-off container of image in the node's network namespace
// (`kubectl debug node/... --profile=sysadmin` does the same through the kubelet).
func runImage(t *testing.T, image string, args ...string) {
	t.Helper()
	name := "e2e-run-" + time.Now().Format("150405")
	// ctr does not take PATH from the image's config as the kubelet does.
	if out, err := node.MustExec("ctr -n k8s.io run --rm --privileged --net-host --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin " +
		"--mount type=bind,src=/lib/modules,dst=/lib/modules,options=rbind:ro " +
		image + " " + name + " " + strings.Join(args, " ")); err != nil {
		t.Fatalf("run %s %v: %v\n%s", image, args, err, out)
	}
}
