// Package kubeadm checks docs/migration.md's advice for kubeadm clusters against kubeadm
// itself: `kubeadm upgrade apply` (built from the pinned k8s.io/kubernetes module) run
// against a real apiserver holding kubeadm's kube-proxy addon, patched as the guide's
// step 2 patches it. No node is needed: without kube-controller-manager a DaemonSet is
// only an object, which is all kubeadm's addon phase writes.
package kubeadm

import (
	"path/filepath"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

var (
	cp         *harness.ControlPlane
	bins       harness.Binaries
	kubeadmBin string
	kubeconfig string
)

func TestMain(m *testing.M) { harness.Main(m, "e2e kubeadm", run) }

func run(m *testing.M) (int, error) {
	var err error
	if kubeadmBin, err = harness.BuildKubeadm(); err != nil {
		return 0, err
	}
	if cp, err = harness.StartControlPlane(); err != nil {
		return 0, err
	}
	defer cp.Stop()
	bins = cp.Bins
	kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return 0, err
	}
	return m.Run(), nil
}
