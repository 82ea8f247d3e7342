package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// A node with no proxy state (new, rebooted, kube-proxy removed after the migration):
// the pod's KUBERNETES_SERVICE_HOST is the kubernetes Service's ClusterIP, which nothing
// routes yet. The daemon must reach the apiserver through deploy/'s kubeconfig.conf and
// then make 10.96.0.1:443 itself answer.

// kubernetesEndpoints gives the kubernetes Service the apiserver's address as the node
// sees it (the harness's apiserver runs without an endpoint reconciler).
func kubernetesEndpoints(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	sl := harness.KubernetesEndpointSlice()
	if _, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.DiscoveryV1().EndpointSlices("default").Delete(ctx, sl.Name, metav1.DeleteOptions{})
	})
}

// TestEmptyNodeBootstrap: wiped node, daemon started as the kubelet starts it; it
// programs the node, and the apiserver answers through its ClusterIP.
func TestEmptyNodeBootstrap(t *testing.T) {
	requireEnv(t)
	kubernetesEndpoints(t)
	wipeNode(t)
	defer restoreNode(t)
	if out, _ := node.MustExec("ipvsadm -Ln | grep -c '^TCP' ; ip link show kube-ipvs0 2>&1 | head -1"); !strings.HasPrefix(out, "0\n") {
		t.Fatalf("node not empty after the wipe:\n%s", out)
	}
	if out, _ := node.MustExec("grep KUBERNETES_SERVICE /start-daemon.sh"); !strings.Contains(out, "KUBERNETES_SERVICE_HOST="+harness.KubernetesServiceIP) {
		t.Fatalf("the daemon does not get the kubelet's environment:\n%s", out)
	}
	startDaemon(t)
	var r harness.HTTPResult
	var err error
	if err := waitFor(30*time.Second, func() bool {
		r, err = node.Get("", "https://"+harness.KubernetesServiceIP+"/version")
		return err == nil && r.Code == 200
	}); err != nil {
		t.Fatalf("https://%s/version through the ClusterIP: %+v %v\n%s", harness.KubernetesServiceIP, r, err, ipvsadm(t))
	}
	var v struct{ GitVersion string }
	if json.Unmarshal([]byte(r.Body), &v); !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Errorf("/version through the ClusterIP: %s", r.Body)
	}
	t.Logf("apiserver %s answered through %s:443 on a node that started empty", v.GitVersion, harness.KubernetesServiceIP)
}

// TestStuckStartSaysWhy: a daemon that cannot reach its apiserver logs the address and
// the error at a steady interval, and /readyz and /status say why; /livez stays 200
// (a restart would not help).
func TestStuckStartSaysWhy(t *testing.T) {
	requireEnv(t)
	const bad = "https://" + harness.APIServerGuestIP + ":6444" // nothing forwards it
	runDaemonVariant(t, "stuck", `sed 's|server: .*|server: `+bad+`|' /var/lib/kube-proxy/kubeconfig.conf > /tmp/stuck/kubeconfig.conf &&
sed 's|/var/lib/kube-proxy/kubeconfig.conf|/tmp/stuck/kubeconfig.conf|' /var/lib/kube-proxy/config.conf > /tmp/stuck/config.conf`)
	var log string
	if err := waitFor(60*time.Second, func() bool {
		log, _ = node.MustExec("grep 'Cannot reach the API server' /tmp/stuck.log || true")
		return strings.Count(log, "\n") >= 3
	}); err != nil {
		all, _ := node.MustExec("tail -20 /tmp/stuck.log")
		t.Fatalf("fewer than 3 'Cannot reach' lines in 60 s:\n%s", all)
	}
	for _, want := range []string{"nothing is programmed until it answers", `"server":"` + bad + `"`, `"error":`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	r, err := node.Get("", "http://127.0.0.1:10256/readyz")
	if err != nil || r.Code != 503 || !strings.Contains(r.Body, "the API server is unreachable") || strings.Contains(r.Body, bad) {
		t.Errorf("/readyz: %+v %v", r, err)
	}
	if r, err := node.Get("", "http://127.0.0.1:10256/livez"); err != nil || r.Code != 200 {
		t.Errorf("/livez: %+v %v", r, err)
	}
	r, err = node.Get("", "http://127.0.0.1:10249/status")
	var st struct {
		APIServer struct {
			Server    string
			Reachable bool
			Error     string
		}
	}
	if err != nil || json.Unmarshal([]byte(r.Body), &st) != nil || st.APIServer.Server != bad || st.APIServer.Reachable || st.APIServer.Error == "" {
		t.Errorf("/status: %+v %v", r, err)
	}
	t.Logf("stuck start, logged every %s:\n%s", "10s", log)
}

// runDaemonVariant stops the node's daemon and starts it as deploy/ does but with
// /tmp/NAME/config.conf, which prepare (a shell command) writes; its log and pid go to
// /tmp/NAME.log and /tmp/NAME.pid. The usual daemon is back when the test ends.
func runDaemonVariant(t *testing.T, name, prepare string) {
	t.Helper()
	stopDaemon(t)
	t.Cleanup(func() {
		_, _ = node.MustExec("kill $(cat /tmp/" + name + ".pid) 2>/dev/null; sleep 1")
		startDaemon(t)
	})
	dir := "/tmp/" + name
	if _, err := node.MustExec("mkdir -p " + dir + " && " + prepare + " && sed -e 's|/var/lib/kube-proxy/config.conf|" + dir +
		"/config.conf|' -e 's|/tmp/daemon|" + dir + "|g' /start-daemon.sh > " + dir + ".sh && sh " + dir + ".sh"); err != nil {
		t.Fatal(err)
	}
}
