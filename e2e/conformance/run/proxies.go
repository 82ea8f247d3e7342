package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// A proxy as users deploy it: ipvs-proxier by `kubectl apply -k deploy` after the one
// edit README asks for (the control-plane endpoint in the kubeconfig), stock kube-proxy
// as `kubeadm init` v1.37 installs it (e2e/kubelet/testdata), in IPVS or nftables mode,
// kube-router's service proxy alone as its proxy DaemonSet runs it (kuberouter.go).

// deployment is a proxy's manifests and its DaemonSet.
type deployment struct {
	apply      []string // kubectl arguments that create it
	daemonSet  string   // in kube-system
	manifestAt string
}

// prepare writes the proxy's manifests under dir.
func prepare(proxy, dir string) (*deployment, error) {
	switch proxy {
	case "ipvs-proxier", "ipvs-proxier-nftables":
		dst := filepath.Join(dir, "deploy")
		_ = os.RemoveAll(dst)
		if out, err := exec.Command("cp", "-r", filepath.Join(harness.RepoRoot(), "deploy"), dst).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("cp deploy: %w\n%s", err, out)
		}
		cm := filepath.Join(dst, "base/configmap.yaml")
		if err := replaceIn(cm, "https://control-plane.invalid:6443", harness.ControlPlaneEndpoint); err != nil {
			return nil, err
		}
		if proxy == "ipvs-proxier-nftables" {
			// README's one command to switch the backend.
			if err := replaceIn(cm, "\n    mode: ipvs\n", "\n    mode: ipvs\n    rulesBackend: nftables\n"); err != nil {
				return nil, err
			}
		}
		return &deployment{apply: []string{"-k", dst}, daemonSet: "ipvs-proxier", manifestAt: dst}, nil
	case "kube-proxy-ipvs", "kube-proxy-nftables":
		// kubeadm's manifest, its config.conf's mode set: ipvs or nftables.
		mode := strings.TrimPrefix(proxy, "kube-proxy-")
		src, err := os.ReadFile(filepath.Join(harness.E2EDir(), "kubelet/testdata/kubeadm-kube-proxy.yaml"))
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, proxy+".yaml")
		if !strings.Contains(string(src), "mode: MODE") {
			return nil, fmt.Errorf("kubeadm-kube-proxy.yaml has no `mode: MODE` to set")
		}
		if err := os.WriteFile(dst, []byte(strings.ReplaceAll(string(src), "mode: MODE", "mode: "+mode)), 0o644); err != nil {
			return nil, err
		}
		return &deployment{apply: []string{"-f", dst}, daemonSet: "kube-proxy", manifestAt: dst}, nil
	case "kube-router":
		m, err := kubeRouterManifest()
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, "kube-router.yaml")
		if err := os.WriteFile(dst, []byte(m), 0o644); err != nil {
			return nil, err
		}
		return &deployment{apply: []string{"-f", dst}, daemonSet: "kube-router", manifestAt: dst}, nil
	}
	return nil, fmt.Errorf("unknown proxy %q (%s)", proxy, strings.Join(conformance.Columns(), ", "))
}

func replaceIn(path, old, new string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), old) {
		return fmt.Errorf("%s has no %s to replace", path, old)
	}
	return os.WriteFile(path, []byte(strings.ReplaceAll(string(b), old, new)), 0o644)
}

// kubectl runs the pinned kubectl against the cluster.
func (c *cluster) kubectl(args ...string) (string, error) {
	out, err := exec.Command(c.cp.Bins.Kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// deploy applies the proxy and waits until its pod on every node is Ready.
func (c *cluster) deploy(d *deployment) error {
	if _, err := c.kubectl(append([]string{"apply"}, d.apply...)...); err != nil {
		return err
	}
	ctx := context.Background()
	var last string
	if err := waitFor(10*time.Minute, func() bool {
		ds, err := c.cp.Admin.AppsV1().DaemonSets("kube-system").Get(ctx, d.daemonSet, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		st := ds.Status
		last = fmt.Sprintf("desired %d, ready %d", st.DesiredNumberScheduled, st.NumberReady)
		return st.DesiredNumberScheduled == int32(len(c.specs)) && st.NumberReady == st.DesiredNumberScheduled
	}); err != nil {
		return fmt.Errorf("DaemonSet %s not ready (%s): %w\n%s", d.daemonSet, last, err, c.nodeLogs())
	}
	harness.Logf("%s ready on %d nodes", d.daemonSet, len(c.specs))
	return nil
}

// remove deletes the proxy's objects and power-cycles the nodes, so the next proxy
// starts on nodes no proxy has programmed.
func (c *cluster) remove(d *deployment) error {
	if _, err := c.kubectl(append([]string{"delete", "--wait=true", "--timeout=5m"}, d.apply...)...); err != nil {
		return err
	}
	return c.reboot()
}

// corednsManifest writes kubeadm's CoreDNS manifests (`kubeadm init phase addon coredns
// --print-manifest`, the pinned kubeadm, this cluster's Service range) under dir and
// returns their path and image, which must be the version the coredns module builds.
func corednsManifest(dir string, shape conformance.Shape) (string, string, error) {
	kubeadm, err := harness.BuildKubeadm()
	if err != nil {
		return "", "", err
	}
	out, err := exec.Command(kubeadm, "init", "phase", "addon", "coredns", "--print-manifest",
		"--kubernetes-version", harness.KubeVersion, "--service-cidr", shape.ServiceCIDRs()).Output()
	if err != nil {
		return "", "", fmt.Errorf("kubeadm init phase addon coredns: %w", err)
	}
	gomod, err := os.ReadFile(filepath.Join(harness.E2EDir(), "conformance/coredns/go.mod"))
	if err != nil {
		return "", "", err
	}
	image, err := conformance.CoreDNSImage(out, gomod)
	if err != nil {
		return "", "", err
	}
	path := filepath.Join(dir, "coredns.yaml")
	return path, image, os.WriteFile(path, out, 0o644)
}

// clusterDNS applies CoreDNS (again: apply is idempotent) and waits until its
// Deployment is available.
func (c *cluster) clusterDNS(manifest string) error {
	if _, err := c.kubectl("apply", "-f", manifest); err != nil {
		return err
	}
	if _, err := c.kubectl("-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=8m"); err != nil {
		out, _ := c.kubectl("-n", "kube-system", "logs", "-l", "k8s-app=kube-dns", "--tail=20")
		return fmt.Errorf("%w\n%s", err, out)
	}
	harness.Logf("CoreDNS ready (kube-dns %s)", c.shape.Primary().DNSServiceIP)
	return nil
}
