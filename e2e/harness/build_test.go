package harness

import "testing"

func TestGoBinaryName(t *testing.T) {
	for pkg, want := range map[string]string{
		"k8s.io/kubernetes/cmd/kubelet": "kubelet",
		"go.etcd.io/etcd/server/v3":     "server",
		"example.com/v2tool":            "v2tool",
		"example.com/cmd/v":             "v",
	} {
		if got := goBinaryName(pkg); got != want {
			t.Errorf("goBinaryName(%q) = %q, want %q", pkg, got, want)
		}
	}
}
