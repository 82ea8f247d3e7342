package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Binaries are the host-side programs of the control plane, and kubectl.
type Binaries struct{ APIServer, Etcd, KubeProxy, Kubectl string }

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
	dir := filepath.Join(Cache(), "bin-"+KubeVersion+"-"+buildRecipe)
	b := Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd"),
		KubeProxy: filepath.Join(dir, "kube-proxy"), Kubectl: filepath.Join(dir, "kubectl")}
	for pkg, out := range map[string]string{
		"k8s.io/kubernetes/cmd/kube-apiserver": b.APIServer,
		"go.etcd.io/etcd/server/v3":            b.Etcd,
		"k8s.io/kubernetes/cmd/kube-proxy":     b.KubeProxy,
		"k8s.io/kubernetes/cmd/kubectl":        b.Kubectl,
	} {
		if _, err := os.Stat(out); err == nil {
			continue
		}
		Logf("building %s %s (first run only; about 10 minutes on 2 cores)", pkg, KubeVersion)
		cmd := exec.Command("go", "build", "-ldflags", versionLDFlags, "-o", out, pkg)
		cmd.Dir = E2EDir()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("build %s: %w\n%s", pkg, err, out)
		}
	}
	return b, nil
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
