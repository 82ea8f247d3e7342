package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Binaries are the host-side programs of the control plane, and kubectl; kube-proxy
// and kube-router are carried into the node VMs.
type Binaries struct{ APIServer, Etcd, KubeProxy, Kubectl, KubeRouter string }

// KubeletBinaries are what the kubelet tier adds: the controllers and the scheduler on
// the host, the kubelet in the node VM.
type KubeletBinaries struct{ ControllerManager, Scheduler, Kubelet string }

// buildRecipe names the build flags below in the cache folder: bump it when they
// change, so that a machine's cache does not keep binaries CI would build differently.
const buildRecipe = "r3"

// versionLDFlags stamp the Kubernetes version into the binaries, as the release build
// does (hack/lib/version.sh); without them they report v0.0.0-master.
//
// -s -w drop the symbol table and DWARF (stack traces keep their names): less to link on
// the cold path of every fresh CI machine, and smaller binaries to copy into the VMs.
func versionLDFlags(version string) string {
	minor := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)[1]
	return "-s -w -X k8s.io/component-base/version.gitVersion=" + version +
		" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=" + minor +
		" -X k8s.io/component-base/version.gitTreeState=clean" +
		" -X k8s.io/client-go/pkg/version.gitVersion=" + version
}

// BuildControlPlane builds kube-apiserver, etcd, kube-proxy and kubectl (pinned in
// e2e/go.mod), and kube-router (BuildKubeRouter), into the cache, once. The first build takes about ten minutes on two cores.
func BuildControlPlane() (Binaries, error) {
	dir := binDir()
	b := Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd"),
		KubeProxy: filepath.Join(dir, "kube-proxy"), Kubectl: filepath.Join(dir, "kubectl")}
	if err := buildKube([]target{{"k8s.io/kubernetes/cmd/kube-apiserver", b.APIServer},
		{"go.etcd.io/etcd/server/v3", b.Etcd}, {"k8s.io/kubernetes/cmd/kube-proxy", b.KubeProxy},
		{"k8s.io/kubernetes/cmd/kubectl", b.Kubectl}}); err != nil {
		return b, err
	}
	var err error
	b.KubeRouter, err = BuildKubeRouter()
	return b, err
}

// BuildKubeletTier builds kube-controller-manager, kube-scheduler and kubelet from the
// same pinned module, version-stamped like the others, once.
func BuildKubeletTier() (KubeletBinaries, error) {
	dir := binDir()
	b := KubeletBinaries{ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Scheduler: filepath.Join(dir, "kube-scheduler"), Kubelet: filepath.Join(dir, "kubelet")}
	return b, buildKube([]target{{"k8s.io/kubernetes/cmd/kube-controller-manager", b.ControllerManager},
		{"k8s.io/kubernetes/cmd/kube-scheduler", b.Scheduler}, {"k8s.io/kubernetes/cmd/kubelet", b.Kubelet}})
}

// BuildKubeadm builds kubeadm from the same pinned module, version-stamped like the
// others, once (the kubeadm tier runs its upgrade's addon phase against the apiserver).
func BuildKubeadm() (string, error) {
	out := filepath.Join(binDir(), "kubeadm")
	return out, buildKube([]target{{"k8s.io/kubernetes/cmd/kubeadm", out}})
}

func binDir() string { return filepath.Join(Cache(), "bin-"+KubeVersion+"-"+buildRecipe) }

// A target is a main package and the cache path of its binary.
type target struct{ pkg, out string }

// buildKube builds the targets the cache lacks from the e2e module's pinned Kubernetes.
func buildKube(targets []target) error {
	return buildKubeFrom(E2EDir(), KubeVersion, binDir(), targets)
}

// buildKubeFrom builds the targets the cache folder dir lacks as static binaries stamped
// with version, from the module in moduleDir, in one go build: its compiles and links
// overlap on both cores, where one build per binary leaves a core idle through each
// link. A lock on the cache folder makes a second builder (make test's niced prebuild,
// started before lint, and the test that needs a binary) wait for the first instead of
// building the same binaries beside it.
func buildKubeFrom(moduleDir, version, dir string, targets []target) error {
	missing := func() []target {
		var m []target
		for _, t := range targets {
			if _, err := os.Stat(t.out); err != nil {
				m = append(m, t)
			}
		}
		return m
	}
	if len(missing()) == 0 {
		return nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	todo := missing()
	if len(todo) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-ldflags", versionLDFlags(version), "-o", tmp + "/"}
	for _, t := range todo {
		Logf("building %s %s (first run only; minutes on 2 cores)", t.pkg, version)
		args = append(args, t.pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, o)
	}
	for _, t := range todo {
		if err := os.Rename(filepath.Join(tmp, goBinaryName(t.pkg)), t.out); err != nil {
			return err
		}
	}
	return nil
}

// goBinaryName is the file go build -o DIR/ writes for a main package: the last element
// of its import path that is not a major-version suffix (go help build).
func goBinaryName(pkg string) string {
	elems := strings.Split(pkg, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		last = elems[len(elems)-2]
	}
	return last
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

// KubeRouterVersion is the kube-router whose service proxy the migration test, the
// benchmarks and the suite run beside ours. It is the only version the Go module proxy
// serves here; it predates kube-router's externalIPs advisory GHSA-phqm-jgc3-qf8g (any
// user who may create Services can claim an external IP on every node), fixed in v2.8.0:
// run it only on the test VM.
const KubeRouterVersion = "v2.1.0"

// kubeRouterModule is kube-router's module path; its go.mod has no replace lines, so
// `go install PKG@VERSION` builds it with its own dependency versions, which adding it
// to e2e/go.mod would bump (minimal version selection) along with ours.
const kubeRouterModule = "github.com/cloudnativelabs/kube-router/v2"

// BuildKubeRouter builds kube-router, static and version-stamped, into the cache, once,
// and returns its path.
func BuildKubeRouter() (string, error) {
	dir := filepath.Join(Cache(), "kube-router-"+KubeRouterVersion+"-"+buildRecipe)
	out := filepath.Join(dir, "kube-router")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	Logf("building kube-router %s (first run only)", KubeRouterVersion)
	pkg := kubeRouterModule + "/cmd/kube-router@" + KubeRouterVersion
	args := []string{"install", "-ldflags", "-s -w -X " + kubeRouterModule + "/pkg/version.Version=" + KubeRouterVersion, pkg}
	cmd := exec.Command("go", args...)
	cmd.Dir = tmp // outside our modules: pkg@version uses kube-router's own go.mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+tmp, "GOWORK=off")
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, o)
	}
	return out, os.Rename(filepath.Join(tmp, "kube-router"), out)
}
