package kubelet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// kubectl runs the kubectl built with the control plane, as an operator would.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bins.Kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("kubectl %s\n%s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	return string(out)
}

// deployCopy is deploy/ with the one edit the README asks of an operator: the
// kubeconfig's server set to the control-plane endpoint.
func deployCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy")
	if out, err := exec.Command("cp", "-r", filepath.Join(harness.RepoRoot(), "deploy"), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	cm := filepath.Join(dir, "base/configmap.yaml")
	b, err := os.ReadFile(cm)
	if err != nil {
		t.Fatal(err)
	}
	const placeholder = "https://control-plane.invalid:6443"
	if !strings.Contains(string(b), placeholder) {
		t.Fatalf("deploy/base/configmap.yaml has no server %s to set", placeholder)
	}
	if err := os.WriteFile(cm, []byte(strings.ReplaceAll(string(b), placeholder, harness.ControlPlaneEndpoint)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// daemonLog is the daemon container's log as the kubelet keeps it on the node.
func daemonLog(t *testing.T) string {
	t.Helper()
	out, _ := node.MustExec("cat /var/log/pods/kube-system_ipvs-proxier-*/ipvs-proxier/*.log 2>/dev/null")
	return out
}

// firstLines is s's first n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// stepTimer logs how long each named step of a long scenario took, so that a slow run
// says where its minutes went.
func stepTimer(t *testing.T) func(step string) {
	last := time.Now()
	return func(step string) {
		t.Helper()
		t.Logf("step %q took %v", step, time.Since(last).Round(100*time.Millisecond))
		last = time.Now()
	}
}

// podTimeline says when a pod was created, scheduled, its container started and it
// became Ready, relative to its creation: where a slow "Ready" spent its time.
func podTimeline(p *v1.Pod) string {
	c0 := p.CreationTimestamp.Time
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s created %s", p.Name, c0.Format(time.TimeOnly))
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "; %s +%v", c.Type, c.LastTransitionTime.Sub(c0).Round(time.Second))
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running != nil {
			fmt.Fprintf(&b, "; container %s started +%v", s.Name, s.State.Running.StartedAt.Sub(c0).Round(time.Second))
		}
	}
	return b.String()
}

// requireEnv skips the test when the tier did not start (IPVS_PROXIER_E2E unset).
func requireEnv(t *testing.T) {
	t.Helper()
	if cp == nil {
		t.Skip("e2e environment not started")
	}
}
