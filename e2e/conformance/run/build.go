package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// suiteBins are the binaries built from the pinned module (e2e/conformance/suite).
type suiteBins struct {
	E2ETest, Ginkgo, Agnhost, Regression, CoreDNS string
	// ModuleDir is k8s.io/kubernetes in the module cache (manifest.go is read there).
	ModuleDir string
}

// cacheDir is where the suite's builds are kept, by the hash of the suite and coredns
// modules' go.mod and go.sum: a new pin builds anew.
func cacheDir() (string, error) {
	h := sha256.New()
	for _, f := range []string{"suite/go.mod", "suite/go.sum", "coredns/go.mod", "coredns/go.sum"} {
		b, err := os.ReadFile(filepath.Join(harness.E2EDir(), "conformance", f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	base := os.Getenv("IPVS_PROXIER_CACHE")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "ipvs-proxier")
	}
	return filepath.Join(base, "conformance-"+hex.EncodeToString(h.Sum(nil))[:12]), nil
}

// buildSuite builds e2e.test (`go test -c`, about a quarter hour on two cores the first
// time), the ginkgo CLI, agnhost, regression-issue-74839 and CoreDNS, each once per pin.
func buildSuite() (suiteBins, error) {
	dir, err := cacheDir()
	if err != nil {
		return suiteBins{}, err
	}
	b := suiteBins{E2ETest: filepath.Join(dir, "e2e.test"), Ginkgo: filepath.Join(dir, "ginkgo"),
		Agnhost: filepath.Join(dir, "agnhost"), Regression: filepath.Join(dir, "regression-issue-74839"),
		CoreDNS: filepath.Join(dir, "coredns")}
	suite := filepath.Join(harness.E2EDir(), "conformance/suite")
	coredns := filepath.Join(harness.E2EDir(), "conformance/coredns")
	for _, step := range []struct {
		out, dir string
		args     []string
		static   bool
	}{
		{b.E2ETest, suite, []string{"test", "-c", "-o", b.E2ETest, "k8s.io/kubernetes/test/e2e"}, false},
		{b.Ginkgo, suite, []string{"build", "-o", b.Ginkgo, "github.com/onsi/ginkgo/v2/ginkgo"}, false},
		{b.Agnhost, suite, []string{"build", "-o", b.Agnhost, "k8s.io/kubernetes/test/images/agnhost"}, true},
		{b.Regression, suite, []string{"build", "-o", b.Regression, "k8s.io/kubernetes/test/images/regression-issue-74839"}, true},
		{b.CoreDNS, coredns, []string{"build", "-o", b.CoreDNS, "github.com/coredns/coredns"}, true},
	} {
		if _, err := os.Stat(step.out); err == nil {
			continue
		}
		harness.Logf("building %s from the pinned module", filepath.Base(step.out))
		cmd := exec.Command("go", step.args...)
		cmd.Dir = step.dir
		if step.static {
			// Static, as agnhost's upstream image builds it (CGO_ENABLED=0), so it
			// runs on any base.
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go %s: %w\n%s", strings.Join(step.args, " "), err, out)
		}
	}
	mod := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	mod.Dir = suite
	out, err := mod.Output()
	if err != nil {
		return b, fmt.Errorf("go list -m k8s.io/kubernetes: %w", err)
	}
	b.ModuleDir = strings.TrimSpace(string(out))
	return b, nil
}

// buildSuiteImages writes the archive of the suite's images (e2e/image -suite) under the
// names the module's manifest.go gives, and returns its path.
func buildSuiteImages(dir string, b suiteBins, corednsImage string) (string, error) {
	manifest, err := os.ReadFile(filepath.Join(b.ModuleDir, "test/utils/image/manifest.go"))
	if err != nil {
		return "", err
	}
	names, err := conformance.ImageNames(manifest)
	if err != nil {
		return "", err
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return "", err
	}
	spec := strings.Join([]string{"agnhost=" + b.Agnhost, "regression=" + b.Regression, "busybox=" + busybox,
		"coredns=" + b.CoreDNS, "coredns-tag=" + corednsImage,
		"agnhost-tag=" + names["Agnhost"], "busybox-tag=" + names["BusyBox"], "nginx-tag=" + names["Nginx"],
		"iptables-tag=" + names["DistrolessIptables"], "regression-tag=" + names["RegressionIssue74839"],
		"pause-tag=" + names["Pause"]}, ",")
	out := filepath.Join(dir, "suite-images.tar")
	harness.Logf("building the suite's images (%s, ...)", names["Agnhost"])
	cmd := exec.Command("go", "run", ".", "-out", out, "-suite", spec)
	cmd.Dir = filepath.Join(harness.E2EDir(), "image")
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("suite images: %w\n%s", err, o)
	}
	return out, nil
}

// buildKubeRouterImage writes kube-router's image (e2e/image -kube-router: the binary
// harness.BuildKubeRouter built, on the Debian base with the programs it execs) under
// the name the manifest runs, and returns its path.
func buildKubeRouterImage(dir, bin string) (string, error) {
	out := filepath.Join(dir, "kube-router.tar")
	harness.Logf("building %s", kubeRouterImage)
	cmd := exec.Command("go", "run", ".", "-out", out, "-tag", kubeRouterImage, "-kube-router", bin)
	cmd.Dir = filepath.Join(harness.E2EDir(), "image")
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("kube-router image: %w\n%s", err, o)
	}
	return out, nil
}
