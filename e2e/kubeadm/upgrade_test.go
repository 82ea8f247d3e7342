package kubeadm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// nodePhases are the phases of `kubeadm upgrade apply` that need a kubeadm node (static
// pods, certificates and kubeconfigs on disk, the kubelet's files); every run here skips
// them, so that what runs is the addon phase (CoreDNS and kube-proxy) as in a real
// upgrade.
var nodePhases = []string{"preflight", "control-plane", "upload-config", "kubeconfig",
	"kubelet-config", "bootstrap-token", "post-upgrade"}

// TestKubeadmUpgradeAdvice runs docs/migration.md's warning and its two remedies through
// `kubeadm upgrade apply` v1.37: an upgrade re-creates kube-proxy's DaemonSet without the
// canary patch (and brings it back once deleted), unless `proxy: {disabled: true}` is in
// kubeadm-config's ClusterConfiguration or the upgrade gets --skip-phases=addon/kube-proxy.
func TestKubeadmUpgradeAdvice(t *testing.T) {
	if cp == nil {
		t.Skip("needs IPVS_PROXIER_E2E=1")
	}
	fixture, err := os.ReadFile("../kubelet/testdata/kubeadm-kube-proxy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	apply(t, strings.ReplaceAll(string(fixture), "MODE", "ipvs"))
	setProxy(t, "{}")
	patch := filepath.Join(harness.RepoRoot(), "deploy/overlays/canary/kube-proxy-patch.yaml")
	kubectl(t, "-n", "kube-system", "patch", "ds", "kube-proxy", "--patch-file", patch)
	if !patched(t) {
		t.Fatal("the guide's patch did not take")
	}

	t.Run("upgrade undoes the patch", func(t *testing.T) {
		upgrade(t)
		if patched(t) {
			t.Fatal("kubeadm upgrade apply kept the patch: the guide's warning is wrong")
		}
	})
	kubectl(t, "-n", "kube-system", "patch", "ds", "kube-proxy", "--patch-file", patch)
	t.Run("skip-phases keeps the patch", func(t *testing.T) {
		upgrade(t, "addon/kube-proxy")
		if !patched(t) {
			t.Fatal("kubeadm upgrade apply --skip-phases=addon/kube-proxy undid the patch")
		}
	})
	setProxy(t, "{disabled: true}")
	t.Run("proxy.disabled keeps the patch", func(t *testing.T) {
		out := upgrade(t)
		if !strings.Contains(out, "Skipping the addon/kube-proxy phase. The addon is disabled.") {
			t.Errorf("kubeadm did not say it skipped the disabled addon:\n%s", out)
		}
		if !patched(t) {
			t.Fatal("kubeadm upgrade apply undid the patch with proxy.disabled")
		}
	})

	// Step 4 of the guide: kube-proxy removed.
	kubectl(t, "-n", "kube-system", "delete", "ds", "kube-proxy")
	kubectl(t, "-n", "kube-system", "delete", "cm", "kube-proxy")
	t.Run("proxy.disabled keeps a deleted kube-proxy away", func(t *testing.T) {
		upgrade(t)
		if exists(t) {
			t.Fatal("kubeadm upgrade apply re-created kube-proxy with proxy.disabled")
		}
	})
	setProxy(t, "{}")
	t.Run("upgrade brings a deleted kube-proxy back", func(t *testing.T) {
		upgrade(t)
		if !exists(t) {
			t.Fatal("kubeadm upgrade apply did not re-create kube-proxy: the guide's warning is wrong")
		}
	})
}

// upgrade runs `kubeadm upgrade apply` as on the control-plane node kubeadm-cp: in new
// UTS and mount namespaces, so that the node name kubeadm takes from the hostname is
// kubeadm-cp and a host's own /etc/kubernetes or /var/lib/kubelet (a developer's
// kubeadm node) is hidden under empty tmpfs mounts instead of read.
func upgrade(t *testing.T, skip ...string) string {
	t.Helper()
	script := `hostname kubeadm-cp && for d in /etc/kubernetes /var/lib/kubelet; do
		if [ -d $d ]; then mount -t tmpfs none $d || exit 1; fi; done && exec "$0" "$@"`
	args := []string{"--uts", "--mount", "--propagation", "private", "sh", "-c", script,
		kubeadmBin, "upgrade", "apply", harness.KubeVersion, "--yes", "--kubeconfig", kubeconfig,
		"--skip-phases=" + strings.Join(append(append([]string{}, nodePhases...), skip...), ",")}
	out, err := exec.Command("unshare", args...).CombinedOutput()
	t.Logf("kubeadm upgrade apply %s (skipping %s):\n%s", harness.KubeVersion, strings.Join(skip, ","), out)
	if err != nil {
		t.Fatalf("kubeadm upgrade apply: %v", err)
	}
	return string(out)
}

// setProxy writes kubeadm-config with the ClusterConfiguration's proxy field set to v.
func setProxy(t *testing.T, v string) {
	t.Helper()
	b, err := os.ReadFile("testdata/kubeadm-control-plane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	apply(t, strings.ReplaceAll(string(b), "PROXY", v))
}

// patched says whether kube-proxy's DaemonSet keeps off the nodes labelled for
// ipvs-proxier, as the guide's patch makes it.
func patched(t *testing.T) bool {
	t.Helper()
	ds, err := cp.Admin.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kube-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := ds.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == "ipvs-proxier.io/enabled" && e.Operator == v1.NodeSelectorOpNotIn {
				return true
			}
		}
	}
	return false
}

func exists(t *testing.T) bool {
	t.Helper()
	_, err := cp.Admin.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kube-proxy", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func apply(t *testing.T, yaml string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", f)
}

func kubectl(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(bins.Kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
