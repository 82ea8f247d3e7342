package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDaemonLinksOnlyItsAPIGroups: the daemon's packages link the three API groups it
// reads (sync/kubeapi's scheme), not client-go's clientset, whose init registers every
// built-in group (~8 MiB more resident memory at start, and a binary half again as
// large). A test may use the clientset (sync/kubeapi/kubeapitest); the daemon may not.
func TestDaemonLinksOnlyItsAPIGroups(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{"k8s.io/api/core/v1": true, "k8s.io/api/discovery/v1": true, "k8s.io/api/networking/v1": true}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "k8s.io/client-go/kubernetes") || strings.HasPrefix(p, "k8s.io/api/") && !allowed[p] {
			t.Errorf("the daemon links %s", p)
		}
	}
}
