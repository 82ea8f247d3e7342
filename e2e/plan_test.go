package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// clusterIPBlocks keeps the ClusterIP (10.96.0.0/16) virtual servers of an ipvsadm -Ln
// listing, with their real servers and without connection counters.
func clusterIPBlocks(out string) string {
	var keep []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "TCP ") || strings.HasPrefix(l, "UDP ") || strings.HasPrefix(l, "SCTP "):
			in = len(f) > 1 && strings.HasPrefix(f[1], "10.96.")
			if in {
				keep = append(keep, l)
			}
		case in && strings.HasPrefix(l, "  ->") && len(f) == 6:
			keep = append(keep, strings.Join(f[:4], " "))
		}
	}
	return strings.Join(keep, "\n")
}

// TestPlanMatchesNode: `ipvs-proxier plan --kubeconfig` on the host, reading the live
// apiserver once, prints the ClusterIP table the node has programmed.
func TestPlanMatchesNode(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("planned"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.13", "node-1"})
	waitIPVS(t, "created", func(s string) bool { return strings.Contains(vsBlock(s, svc.Spec.ClusterIP+":80"), "10.244.0.13") })
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := harness.BuildNodeBinaries(dir); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(dir, "usr/local/bin/ipvs-proxier"), "plan", "--kubeconfig", kubeconfig,
		"--hostname-override", "node-1").Output()
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	plan, live := clusterIPBlocks(string(out)), clusterIPBlocks(ipvsadm(t))
	if !strings.Contains(plan, svc.Spec.ClusterIP+":80") {
		t.Fatalf("plan lacks the service:\n%s", out)
	}
	if plan != live {
		t.Errorf("plan and node differ:\n--- plan\n%s\n--- node\n%s", plan, live)
	}
}
