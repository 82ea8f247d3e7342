package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// The scenarios run in order on one node (go test runs files in name order, tests in
// source order: scenarios_1, then scenarios_2): each starts from the state the one
// before left (the DaemonSet applied, the pods made).

const webSvc = "web" // the Service every scenario's request loop goes through

func webTarget(t *testing.T) string {
	t.Helper()
	svc, err := cp.Admin.CoreV1().Services("default").Get(context.Background(), webSvc, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP + ":80"
}

// TestApplyOnEmptyNode: `kubectl apply -k deploy` (after the README's one edit) on a node
// that never ran a proxy: the controller schedules the DaemonSet's pod, the kubelet
// starts it from the image and finds it Ready, the node is programmed, and the
// kubernetes Service answers through 10.96.0.1 from a pod.
func TestApplyOnEmptyNode(t *testing.T) {
	requireEnv(t)
	if out, _ := node.MustExec("ipvsadm -Ln | grep -c '^TCP'; ip link show kube-ipvs0 2>&1 | head -1"); !strings.HasPrefix(out, "0\n") {
		t.Fatalf("the node is not empty:\n%s", out)
	}
	addPods(t)
	createService(t, webSvc, "10.244.0.12", "10.244.0.13")
	start := time.Now()
	kubectl(t, "apply", "-k", deployCopy(t))
	p := waitPodReady(t, 8*time.Minute, nil)
	t.Logf("pod %s Ready %v after kubectl apply (image %s)", p.Name, time.Since(start).Round(time.Second), p.Status.ContainerStatuses[0].Image)
	// The Go runtime's memory limit is the container's memory request (GOMEMLIMIT through
	// the downward API), as the daemon reports it when it starts.
	if want := p.Spec.Containers[0].Resources.Requests.Memory().Value(); want == 0 ||
		!strings.Contains(daemonLog(t), fmt.Sprintf(`"memoryLimitBytes":%d`, want)) {
		t.Errorf("the daemon's log does not report a memory limit of the request, %d bytes", want)
	}
	checkPrivileges(t, p)
	var r harness.HTTPResult
	var err error
	if werr := waitFor(time.Minute, func() bool {
		r, err = node.Get("pod1", "https://"+harness.KubernetesServiceIP+"/version")
		return err == nil && r.Code == 200
	}); werr != nil {
		out, _ := node.MustExec("ipvsadm -Ln")
		t.Fatalf("https://%s/version from pod1: %+v %v\n%s", harness.KubernetesServiceIP, r, err, out)
	}
	var v struct{ GitVersion string }
	if json.Unmarshal([]byte(r.Body), &v); v.GitVersion != harness.KubeVersion {
		t.Errorf("/version through the ClusterIP: %s", r.Body)
	}
	stop := node.RequestLoop(t.Logf, "pod1", webTarget(t))
	time.Sleep(5 * time.Second)
	if ok, failed := stop(); ok == 0 || failed != 0 {
		t.Errorf("through the web Service: %d answered, %d failed", ok, failed)
	}
}

// rolledTag is the new tag of the rolling update: the same image under another name
// (tagged in the node's containerd), so the DaemonSet's template changes as in a release.
const rolledTag = "ghcr.io/ipvs-proxier/ipvs-proxier:v0.1.0-e2e-rolled"

// TestRollingUpdate: the DaemonSet moves to a new image tag under a request loop; the
// old pod stops (leaving the node programmed), the new one adopts the state: no request
// fails.
func TestRollingUpdate(t *testing.T) {
	requireEnv(t)
	old := waitPodReady(t, 2*time.Minute, nil)
	if _, err := node.MustExec("ctr -n k8s.io images tag ghcr.io/ipvs-proxier/ipvs-proxier:v0.1.0 " + rolledTag); err != nil {
		t.Fatal(err)
	}
	stop := node.RequestLoop(t.Logf, "pod1", webTarget(t))
	start := time.Now()
	kubectl(t, "-n", "kube-system", "set", "image", "ds/ipvs-proxier", "ipvs-proxier="+rolledTag)
	kubectl(t, "-n", "kube-system", "rollout", "status", "ds/ipvs-proxier", "--timeout=8m")
	p := waitPodReady(t, 2*time.Minute, func(p *v1.Pod) bool { return p.Name != old.Name && p.Spec.Containers[0].Image == rolledTag })
	time.Sleep(5 * time.Second)
	ok, failed := stop()
	t.Logf("rolled %s -> %s in %v: %d requests answered, %d failed", old.Name, p.Name, time.Since(start).Round(time.Second), ok, failed)
	if ok == 0 || failed != 0 {
		t.Errorf("during the rolling update: %d answered, %d failed", ok, failed)
	}
}

// TestAPIServerUnreachable: the node loses the apiserver for minutes (its packets to the
// control-plane endpoint dropped on the node). The pod says so (its log, /readyz 503 with
// the reason, /status), /livez stays 200 so the kubelet does not restart it, the
// programmed state keeps forwarding, and a Service created meanwhile is programmed once
// the apiserver is back.
func TestAPIServerUnreachable(t *testing.T) {
	requireEnv(t)
	harness.RequireAll(t, "the apiserver outage (TestAPIServerOutage)")
	before := waitPodReady(t, 2*time.Minute, nil)
	stop := node.RequestLoop(t.Logf, "pod1", webTarget(t))
	// The pods' logs (this one's and those of earlier pods still on the node) may hold the
	// line already, from a probe that failed at a start: only a new one counts.
	const said = "Cannot reach the API server; the programmed state is kept"
	earlier := strings.Count(daemonLog(t), said)
	const drop = "OUTPUT -d " + harness.APIServerGuestIP + " -p tcp --dport 6443 -j DROP"
	if _, err := node.MustExec("iptables -I " + drop); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	restored := false
	restore := func() {
		if !restored {
			restored = true
			_, _ = node.MustExec("iptables -D " + drop)
		}
	}
	defer restore()
	var log string
	// The daemon learns of a silent partition when its watch connection's HTTP/2 health
	// check gives up (client-go: 30 s without a frame, then a 15 s ping), then probes.
	if err := waitFor(4*time.Minute, func() bool {
		log = daemonLog(t)
		return strings.Count(log, said) > earlier
	}); err != nil {
		t.Fatalf("no new %q in the pod's log %v after the cut (%d before it):\n%.3000s", said, err, earlier, tail(log, 3000))
	}
	t.Logf("the daemon said so %v after the cut", time.Since(cut).Round(time.Second))
	late := createService(t, "late", "10.244.0.12")
	var ready, status harness.HTTPResult
	if err := waitFor(time.Minute, func() bool {
		ready, _ = node.Get("", "http://127.0.0.1:10256/readyz")
		return ready.Code == 503 && strings.Contains(ready.Body, "the API server is unreachable")
	}); err != nil {
		t.Errorf("/readyz while the apiserver is unreachable: %+v", ready)
	}
	status, _ = node.Get("", "http://127.0.0.1:10249/status")
	var st struct {
		APIServer struct {
			Server, Error string
			Reachable     bool
		}
	}
	if json.Unmarshal([]byte(status.Body), &st) != nil || st.APIServer.Reachable || st.APIServer.Server != harness.ControlPlaneEndpoint || st.APIServer.Error == "" {
		t.Errorf("/status while the apiserver is unreachable: %s", status.Body)
	}
	if live, err := node.Get("", "http://127.0.0.1:10256/livez"); err != nil || live.Code != 200 {
		t.Errorf("/livez while the apiserver is unreachable: %+v %v", live, err)
	}
	t.Logf("/readyz %d %q", ready.Code, strings.TrimSpace(ready.Body))
	for time.Since(cut) < 2*time.Minute+30*time.Second {
		time.Sleep(5 * time.Second)
	}
	if out, _ := node.MustExec("ipvsadm -Ln -t " + late.Spec.ClusterIP + ":80"); strings.Contains(out, "TCP") {
		t.Errorf("a Service created while the node was cut off is programmed already:\n%s", out)
	}
	restore()
	back := time.Now()
	if err := waitFor(3*time.Minute, func() bool {
		out, _ := node.MustExec("ipvsadm -Ln -t " + late.Spec.ClusterIP + ":80 2>/dev/null")
		return strings.Contains(out, "10.244.0.12:80")
	}); err != nil {
		t.Errorf("the Service created during the outage is not programmed %v after the apiserver came back", err)
	}
	t.Logf("caught up %v after the apiserver came back", time.Since(back).Round(time.Second))
	after := waitPodReady(t, 3*time.Minute, nil)
	if after.UID != before.UID || restarts(after) != restarts(before) {
		t.Errorf("the pod was replaced or restarted: %s restarts %d -> %s restarts %d", before.Name, restarts(before), after.Name, restarts(after))
	}
	ok, failed := stop()
	t.Logf("outage of %v: %d requests answered, %d failed", back.Sub(cut).Round(time.Second), ok, failed)
	if ok == 0 || failed != 0 {
		t.Errorf("during the outage: %d answered, %d failed", ok, failed)
	}
}

// TestReboot: the node loses power and boots its disk again, with an empty kernel
// (no virtual servers, sets, dummy interface or routes): the kubelet starts the pod
// again and the Services answer again; the time from power-on is measured.
func TestReboot(t *testing.T) {
	requireEnv(t)
	harness.RequireAll(t, "the restart with zero failed requests (TestDaemonRestartNoFailures, TestRollingUpdate)")
	before := waitPodReady(t, 2*time.Minute, nil)
	node.PowerOff()
	on := time.Now()
	if err := node.Boot(); err != nil {
		t.Fatal(err)
	}
	booted := time.Since(on)
	if out, _ := node.MustExec("ipvsadm -Ln | grep -c '^TCP'"); !strings.HasPrefix(out, "0") {
		t.Logf("virtual servers right after the agent came up: %s", out)
	}
	addPods(t)
	target := webTarget(t)
	if err := waitFor(10*time.Minute, func() bool { _, err := node.Ask("pod1", "tcp", target); return err == nil }); err != nil {
		out, _ := node.MustExec("ipvsadm -Ln; tail -30 /var/log/kubelet.log")
		t.Fatalf("the web Service does not answer after the reboot: %v\n%s", err, out)
	}
	answered := time.Since(on)
	p := waitPodReady(t, 5*time.Minute, func(p *v1.Pod) bool { return restarts(p) > restarts(before) || p.UID != before.UID })
	t.Logf("reboot: agent up %v after power-on, web Service answering %v after power-on, pod %s Ready %v after (restarts %d)",
		booted.Round(time.Second), answered.Round(time.Second), p.Name, time.Since(on).Round(time.Second), restarts(p))
	stop := node.RequestLoop(t.Logf, "pod1", target)
	time.Sleep(5 * time.Second)
	if ok, failed := stop(); ok == 0 || failed != 0 {
		t.Errorf("after the reboot: %d answered, %d failed", ok, failed)
	}
}

// checkPrivileges reads the running daemon's /proc/1/status inside its container
// (through the node's containerd): its capability sets are NET_ADMIN and NET_RAW alone,
// as the manifest says, it cannot gain privileges, and seccomp filters it; the init
// container ran and exited 0.
func checkPrivileges(t *testing.T, p *v1.Pod) {
	t.Helper()
	out, err := tryExecIn(p, "cat", "/proc/1/status")
	if err != nil {
		t.Fatalf("/proc/1/status in the container: %v\n%s", err, out)
	}
	// CAP_NET_ADMIN is bit 12, CAP_NET_RAW bit 13.
	const want = "0000000000003000"
	fields := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"CapEff", "CapPrm", "CapBnd"} {
		if fields[k] != want {
			t.Errorf("%s %q, want %s (NET_ADMIN, NET_RAW)", k, fields[k], want)
		}
	}
	if fields["NoNewPrivs"] != "1" || fields["Seccomp"] != "2" {
		t.Errorf("NoNewPrivs %q Seccomp %q, want 1 and 2 (filter)", fields["NoNewPrivs"], fields["Seccomp"])
	}
	if st := p.Status.InitContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
		t.Errorf("init container status %+v", st)
	}
	t.Logf("daemon container: CapEff %s NoNewPrivs %s Seccomp %s", fields["CapEff"], fields["NoNewPrivs"], fields["Seccomp"])
}

// TestSysctlNeededAfterStart: the config gains strictARP, and the daemon's container
// restarts (the init container does not run again): the unprivileged daemon cannot write
// arp_ignore, so it says so (a NodeSetupIncomplete Event on the Node, /readyz 503, /livez
// 200) and keeps forwarding; a new pod (its init container) sets it and is Ready.
func TestSysctlNeededAfterStart(t *testing.T) {
	requireEnv(t)
	ctx := context.Background()
	before := waitPodReady(t, 2*time.Minute, nil)
	if _, err := node.MustExec("echo 0 > /proc/sys/net/ipv4/conf/all/arp_ignore"); err != nil {
		t.Fatal(err)
	}
	cms := cp.Admin.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, "ipvs-proxier", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig := cm.Data["config.conf"]
	if !strings.Contains(orig, "\n    ipvs:\n") && !strings.Contains(orig, "\nipvs:\n") {
		t.Fatalf("config.conf has no ipvs: section to extend:\n%s", orig)
	}
	cm.Data["config.conf"] = strings.Replace(orig, "ipvs:\n", "ipvs:\n  strictARP: true\n", 1)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cm, err := cms.Get(ctx, "ipvs-proxier", metav1.GetOptions{})
		if err == nil {
			cm.Data["config.conf"] = orig
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("restoring the ConfigMap: %v", err)
		}
		// The node as the scenarios after this one expect it: strictARP off.
		if _, err := node.MustExec("echo 0 > /proc/sys/net/ipv4/conf/all/arp_ignore; echo 0 > /proc/sys/net/ipv4/conf/all/arp_announce"); err != nil {
			t.Errorf("restoring arp_ignore: %v", err)
		}
	})
	// The kubelet refreshes the mounted ConfigMap within its sync period; then the
	// daemon is stopped and the kubelet restarts its container alone.
	vol := fmt.Sprintf("/var/lib/kubelet/pods/%s/volumes/kubernetes.io~configmap/config/config.conf", before.UID)
	if err := waitFor(3*time.Minute, func() bool {
		out, _ := node.MustExec("grep -c strictARP " + vol)
		return strings.TrimSpace(out) == "1"
	}); err != nil {
		t.Fatalf("the pod's config.conf never showed the change")
	}
	if _, err := node.MustExec("kill $(pidof ipvs-proxier)"); err != nil {
		t.Fatal(err)
	}
	var ready harness.HTTPResult
	if err := waitFor(3*time.Minute, func() bool {
		evs, _ := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=NodeSetupIncomplete"})
		ready, _ = node.Get("", "http://127.0.0.1:10256/readyz")
		return evs != nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "arp_ignore") && ready.Code == 503
	}); err != nil {
		t.Fatalf("no NodeSetupIncomplete Event naming arp_ignore with /readyz 503 (last %+v):\n%s", ready, tail(daemonLog(t), 2000))
	}
	if !strings.Contains(ready.Body, "node setup incomplete") {
		t.Errorf("/readyz body %q", ready.Body)
	}
	if live, err := node.Get("", "http://127.0.0.1:10256/livez"); err != nil || live.Code != 200 {
		t.Errorf("/livez %+v %v", live, err)
	}
	stop := node.RequestLoop(t.Logf, "pod1", webTarget(t))
	time.Sleep(5 * time.Second)
	if ok, failed := stop(); ok == 0 || failed != 0 {
		t.Errorf("while not ready: %d answered, %d failed", ok, failed)
	}
	// A new pod: its init container sets arp_ignore, and it is Ready.
	if err := cp.Admin.CoreV1().Pods("kube-system").Delete(ctx, before.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodReady(t, 5*time.Minute, func(p *v1.Pod) bool { return p.UID != before.UID })
	if out, _ := node.MustExec("cat /proc/sys/net/ipv4/conf/all/arp_ignore"); strings.TrimSpace(out) != "1" {
		t.Errorf("arp_ignore %q after the new pod's init container, want 1", out)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
