package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

const canaryLabel = "ipvs-proxier.io/enabled"

// TestCanaryOverlay: the canary overlay's patch, applied to deploy/'s DaemonSet, is
// accepted by the apiserver and selects only labelled nodes; the kube-proxy patch, sent
// to the apiserver as kubectl would, keeps kube-proxy off exactly those nodes.
func TestCanaryOverlay(t *testing.T) {
	requireEnv(t)
	ctx := context.Background()
	dir := filepath.Join(harness.RepoRoot(), "deploy/overlays/canary")
	var k struct {
		Resources []string
		Patches   []struct {
			Path   string
			Target struct{ Kind, Name string }
		}
	}
	// kubectl's own kustomize builds both, as `kubectl apply -k` would: it refuses a base
	// whose folder holds the overlay ("cycle detected"), which the patch checks below
	// cannot see.
	for _, d := range []string{filepath.Join(harness.RepoRoot(), "deploy"), dir} {
		if out, err := exec.Command(cp.Bins.Kubectl, "kustomize", d).CombinedOutput(); err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", d, err, out)
		}
	}
	unmarshalFile(t, filepath.Join(dir, "kustomization.yaml"), &k)
	if len(k.Resources) != 1 || k.Resources[0] != "../../base" || len(k.Patches) != 1 || k.Patches[0].Target.Kind != "DaemonSet" {
		t.Fatalf("unexpected kustomization: %+v", k)
	}
	ds, err := cp.Admin.AppsV1().DaemonSets("kube-system").Get(ctx, k.Patches[0].Target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []any
	unmarshalFile(t, filepath.Join(dir, k.Patches[0].Path), &ops)
	opsJSON, _ := json.Marshal(ops)
	patch, err := jsonpatch.DecodePatch(opsJSON)
	if err != nil {
		t.Fatal(err)
	}
	ds.ObjectMeta = metav1.ObjectMeta{Name: "ipvs-proxier-canary", Namespace: "kube-system"}
	orig, _ := json.Marshal(ds)
	patched, err := patch.Apply(orig)
	if err != nil {
		t.Fatal(err)
	}
	var canary appsv1.DaemonSet
	if err := json.Unmarshal(patched, &canary); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Admin.AppsV1().DaemonSets("kube-system").Create(ctx, &canary,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("the apiserver refuses the canary DaemonSet: %v", err)
	}
	if canary.Spec.Template.Spec.NodeSelector[canaryLabel] != "true" {
		t.Errorf("canary nodeSelector %v", canary.Spec.Template.Spec.NodeSelector)
	}

	// kube-proxy's DaemonSet as kubeadm writes it (the fields the patch meets).
	kp := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-proxy"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": "kube-proxy"}},
				Spec: v1.PodSpec{HostNetwork: true, NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Containers: []v1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:v1.37.2",
						Command: []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf"}}}}}}}
	if _, err := cp.Admin.AppsV1().DaemonSets("kube-system").Create(ctx, kp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.AppsV1().DaemonSets("kube-system").Delete(context.Background(), "kube-proxy", metav1.DeleteOptions{})
	})
	raw, err := os.ReadFile(filepath.Join(dir, "kube-proxy-patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cp.Admin.AppsV1().DaemonSets("kube-system").Patch(ctx, "kube-proxy", types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("kubectl patch --patch-file would fail: %v", err)
	}
	terms := got.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	e := terms[0].MatchExpressions[0]
	if e.Key != canaryLabel || e.Operator != v1.NodeSelectorOpNotIn || e.Values[0] != "true" ||
		got.Spec.Template.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("patched kube-proxy: %+v, nodeSelector %v", terms, got.Spec.Template.Spec.NodeSelector)
	}
	// Together: a labelled node matches exactly one of the two DaemonSets.
	for _, labels := range []map[string]string{{canaryLabel: "true"}, {}} {
		ours := labels[canaryLabel] == canary.Spec.Template.Spec.NodeSelector[canaryLabel]
		theirs := labels[e.Key] != e.Values[0]
		if ours == theirs {
			t.Errorf("node labels %v: ipvs-proxier %v, kube-proxy %v; want exactly one", labels, ours, theirs)
		}
	}
}

func unmarshalFile(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
