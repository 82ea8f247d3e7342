package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// SkewMinors are the kube-apiserver minor versions `make e2e-skew` runs the daemon
// against: the pinned one (KubeVersion) and the three before it, the versions a node
// proxy built against v1.37's client meets while a cluster's control plane is upgraded
// to it (the version skew policy keeps kube-proxy within three minors of the apiserver).
var SkewMinors = []string{"1.34", "1.35", "1.36", "1.37"}

// BuildAPIServerAt builds kube-apiserver and etcd of the given minor version (the
// module e2e/skew/apiservers/vMINOR pins the release and the etcd its kubeadm deploys),
// static and version-stamped, into the cache, once; the pinned minor is the e2e module's
// own build. The other binaries are BuildControlPlane's.
func BuildAPIServerAt(minor string) (Binaries, error) {
	bins, err := BuildControlPlane()
	if err != nil {
		return bins, err
	}
	moduleDir := filepath.Join(E2EDir(), "skew", "apiservers", "v"+minor)
	gomod, err := os.ReadFile(filepath.Join(moduleDir, "go.mod"))
	if err != nil {
		if os.IsNotExist(err) && strings.HasPrefix(KubeVersion, "v"+minor+".") {
			return bins, nil
		}
		return bins, fmt.Errorf("apiserver v%s: %w", minor, err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(gomod)
	if m == nil {
		return bins, fmt.Errorf("%s/go.mod requires no k8s.io/kubernetes", moduleDir)
	}
	version := string(m[1])
	dir := filepath.Join(Cache(), "apiserver-"+version+"-"+buildRecipe)
	bins.APIServer, bins.Etcd = filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd")
	return bins, buildKubeFrom(moduleDir, version, dir, []target{{"k8s.io/kubernetes/cmd/kube-apiserver", bins.APIServer},
		{"go.etcd.io/etcd/server/v3", bins.Etcd}})
}
