package conformance

import "testing"

func TestCoreDNSImage(t *testing.T) {
	manifest := []byte("kind: Deployment\nspec:\n  containers:\n      - name: coredns\n        image: registry.k8s.io/coredns/coredns:v1.14.6\n")
	gomod := []byte("module x\n\nrequire (\n\tgithub.com/coredns/coredns v1.14.6 // indirect\n)\n")
	img, err := CoreDNSImage(manifest, gomod)
	if err != nil || img != "registry.k8s.io/coredns/coredns:v1.14.6" {
		t.Fatalf("%q %v", img, err)
	}
	if _, err := CoreDNSImage(manifest, []byte("require github.com/coredns/coredns v1.12.0\n")); err == nil {
		t.Error("a version kubeadm does not deploy accepted")
	}
	if _, err := CoreDNSImage([]byte("image: a\nimage: b\n"), gomod); err == nil {
		t.Error("two images accepted")
	}
}
