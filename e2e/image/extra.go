package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The e2e kubelet tier's other images, made the same way: the pod sandbox (containerd's
// sandbox_image), stock kube-proxy on the same Debian base, for the migration guide's
// kubeadm DaemonSet and the conformance suite, and kube-router's service proxy for the
// suite's DaemonSet.

// pauseImage is one layer holding the static ./pause program as /pause.
func (b *build) pauseImage() (v1.Image, error) {
	tmp, err := os.MkdirTemp("", "pause-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./pause")
	cmd.Dir = filepath.Join(b.repo, "e2e/image")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build pause: %w\n%s", err, o)
	}
	exe, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	l, err := b.layer([]layerFile{{"pause", 0o755, exe}}, nil)
	if err != nil {
		return nil, err
	}
	return b.assemble(func(c *v1.Config) { c.Entrypoint = []string{"/pause"} }, l)
}

// kubeProxyPackages are what kube-proxy's image adds to the Dockerfile's packages:
// nftables, whose nft its nftables mode runs (knftables execs `nft -f -`; upstream's
// distroless-iptables image carries it since kube-proxy's nftables mode, KEP-3866).
var kubeProxyPackages = []string{"nftables"}

// kubeRouterPackages are what kube-router's image adds to the Dockerfile's packages
// (which hold ipset, iptables with its -save and -restore, conntrack): iproute2, whose
// `ip` its service proxy runs (pkg/controllers/proxy/linux_networking.go and utils.go)
// and whose /etc/iproute2/rt_tables it edits.
var kubeRouterPackages = []string{"iproute2"}

// withPackages is b on the Dockerfile's packages and extra: its own root filesystem,
// cached by its package list.
func (b *build) withPackages(extra []string) *build {
	c := *b
	c.packages = append(append([]string(nil), b.packages...), extra...)
	return &c
}

// kubeProxyImage is kube-proxy (a binary built from the pinned module) at
// /usr/local/bin/kube-proxy, where kubeadm's DaemonSet runs it, on our Debian base: the
// same userland (iptables, ipset, kmod, conntrack, nft) and wrapper as kube-proxy's image.
func (b *build) kubeProxyImage(bin, version string) (v1.Image, error) {
	return b.withPackages(kubeProxyPackages).onBase("/usr/local/bin/kube-proxy", bin, version)
}

// kubeRouterImage is kube-router (the binary harness.BuildKubeRouter builds from its
// pinned module) at /usr/local/bin/kube-router, where its image has it, on the same
// base with the programs it execs.
func (b *build) kubeRouterImage(bin, version string) (v1.Image, error) {
	return b.withPackages(kubeRouterPackages).onBase("/usr/local/bin/kube-router", bin, version)
}
