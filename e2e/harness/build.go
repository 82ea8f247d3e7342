package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Binaries are the host-side programs of the control plane, and kubectl.
type Binaries struct{ APIServer, Etcd, KubeProxy, Kubectl string }

// KubeletBinaries are what the kubelet tier adds: the controllers and the scheduler on
// the host, the kubelet in the node VM.
type KubeletBinaries struct{ ControllerManager, Scheduler, Kubelet string }

// buildRecipe names the build flags below in the cache folder: bump it when they
// change, so that a machine's cache does not keep binaries CI would build differently.
const buildRecipe = "r2"

// versionLDFlags stamp the Kubernetes version into the binaries, as the release build
// does (hack/lib/version.sh); without them they report v0.0.0-master.
var versionLDFlags = "-X k8s.io/component-base/version.gitVersion=" + KubeVersion +
	" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" +
	" -X k8s.io/component-base/version.gitTreeState=clean" +
	" -X k8s.io/client-go/pkg/version.gitVersion=" + KubeVersion

// BuildControlPlane builds kube-apiserver, etcd, kube-proxy and kubectl (pinned in
// e2e/go.mod) into the cache, once. The first build takes about ten minutes on two cores.
func BuildControlPlane() (Binaries, error) {
	dir := binDir()
	b := Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd"),
		KubeProxy: filepath.Join(dir, "kube-proxy"), Kubectl: filepath.Join(dir, "kubectl")}
	for pkg, out := range map[string]string{
		"k8s.io/kubernetes/cmd/kube-apiserver": b.APIServer,
		"go.etcd.io/etcd/server/v3":            b.Etcd,
		"k8s.io/kubernetes/cmd/kube-proxy":     b.KubeProxy,
		"k8s.io/kubernetes/cmd/kubectl":        b.Kubectl,
	} {
		if err := buildKube(pkg, out); err != nil {
			return b, err
		}
	}
	return b, nil
}

// BuildKubeletTier builds kube-controller-manager, kube-scheduler and kubelet from the
// same pinned module, version-stamped like the others, once.
func BuildKubeletTier() (KubeletBinaries, error) {
	dir := binDir()
	b := KubeletBinaries{ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Scheduler: filepath.Join(dir, "kube-scheduler"), Kubelet: filepath.Join(dir, "kubelet")}
	for pkg, out := range map[string]string{
		"k8s.io/kubernetes/cmd/kube-controller-manager": b.ControllerManager,
		"k8s.io/kubernetes/cmd/kube-scheduler":          b.Scheduler,
		"k8s.io/kubernetes/cmd/kubelet":                 b.Kubelet,
	} {
		if err := buildKube(pkg, out); err != nil {
			return b, err
		}
	}
	return b, nil
}

// BuildKubeadm builds kubeadm from the same pinned module, version-stamped like the
// others, once (the kubeadm tier runs its upgrade's addon phase against the apiserver).
func BuildKubeadm() (string, error) {
	out := filepath.Join(binDir(), "kubeadm")
	return out, buildKube("k8s.io/kubernetes/cmd/kubeadm", out)
}

func binDir() string { return filepath.Join(Cache(), "bin-"+KubeVersion+"-"+buildRecipe) }

// buildKube builds one static, version-stamped binary unless the cache has it. A lock
// on the cache folder makes a second builder (make test's niced prebuild, started before
// lint, and the test that needs the binary) wait for the first instead of building the
// same binary beside it.
func buildKube(pkg, out string) error {
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	unlock, err := lockDir(filepath.Dir(out))
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	Logf("building %s %s (first run only; minutes on 2 cores)", pkg, KubeVersion)
	tmp := out + ".tmp"
	cmd := exec.Command("go", "build", "-ldflags", versionLDFlags, "-o", tmp, pkg)
	cmd.Dir = E2EDir()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", pkg, err, o)
	}
	return os.Rename(tmp, out)
}

// lockDir takes an exclusive flock on dir/.lock, creating dir, and returns its release.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// BuildNodeBinaries builds the daemon (from the main module) and the agent, static, into
// dir/usr/local/bin/ipvs-proxier and dir/agent.
func BuildNodeBinaries(dir string) error {
	steps := []struct{ moduleDir, pkg, out string }{
		{RepoRoot(), "./cmd/ipvs-proxier", filepath.Join(dir, "usr/local/bin/ipvs-proxier")},
		{E2EDir(), "./agent", filepath.Join(dir, "agent")},
	}
	for _, s := range steps {
		cmd := exec.Command("go", "build", "-o", s.out, s.pkg)
		cmd.Dir = s.moduleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", s.pkg, err, out)
		}
	}
	return nil
}
