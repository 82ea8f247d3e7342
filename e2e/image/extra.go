package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The e2e kubelet tier's other images, made the same way: the pod sandbox (containerd's
// sandbox_image) and stock kube-proxy on the same Debian base, for the migration guide's
// kubeadm DaemonSet.

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

// kubeProxyImage is kube-proxy (a binary built from the pinned module) at
// /usr/local/bin/kube-proxy, where kubeadm's DaemonSet runs it, on our Debian base: the
// same userland (iptables, ipset, kmod, conntrack) and wrapper as kube-proxy's image.
func (b *build) kubeProxyImage(bin, version string) (v1.Image, error) {
	return b.onBase("/usr/local/bin/kube-proxy", bin, version)
}
