package conformance

import (
	"fmt"
	"regexp"
	"strings"
)

// Cluster DNS: CoreDNS as `kubeadm init` v1.37 deploys it (`kubeadm init phase addon
// coredns --print-manifest`: its Deployment, ConfigMap, kube-dns Service at the tenth
// address of the Service range, RBAC), from a binary built at the version kubeadm names.
// Most Service tests reach their Service by name from a pod.

// DNSServiceIP is the kube-dns Service's ClusterIP in a 10.96.0.0/16 Service range.
const DNSServiceIP = "10.96.0.10"

var imageLine = regexp.MustCompile(`(?m)^\s*image:\s*(\S+)\s*$`)

// CoreDNSImage returns the image kubeadm's CoreDNS manifest runs and checks that its
// tag is the version the coredns module builds (go.mod's `tool` dependency).
func CoreDNSImage(manifest, gomod []byte) (string, error) {
	m := imageLine.FindAllSubmatch(manifest, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("kubeadm's CoreDNS manifest: %d image lines, want 1", len(m))
	}
	image := string(m[0][1])
	_, tag, ok := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	if !ok || !strings.Contains(image, "coredns") {
		return "", fmt.Errorf("kubeadm's CoreDNS manifest runs %q", image)
	}
	v := regexp.MustCompile(`(?m)^\s*github\.com/coredns/coredns (v\S+)`).FindSubmatch(gomod)
	if v == nil {
		return "", fmt.Errorf("coredns/go.mod requires no github.com/coredns/coredns")
	}
	if string(v[1]) != tag {
		return "", fmt.Errorf("kubeadm deploys CoreDNS %s, coredns/go.mod builds %s", tag, v[1])
	}
	return image, nil
}
