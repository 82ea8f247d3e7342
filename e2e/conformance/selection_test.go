package conformance

import (
	"os"
	"testing"
)

// TestSelectionFile parses the committed selection and checks that it keeps the
// specs the harness exists for and drops only what it says why.
func TestSelectionFile(t *testing.T) {
	b, err := os.ReadFile("selection.txt")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ParseSelection(b)
	if err != nil {
		t.Fatal(err)
	}
	for spec, wantSkip := range map[string]bool{
		"[sig-network] Services should serve a basic endpoint from pods [Conformance]":                                            false,
		"[sig-network] Networking Granular Checks: Services should function for pod-Service: udp":                                 false,
		"[sig-network] Conntrack should be able to preserve UDP traffic when server pod cycles for a NodePort service":            false,
		"[sig-network] KubeProxy should set TCP CLOSE_WAIT timeout [Privileged]":                                                  false,
		"[sig-network] Traffic Distribution should route traffic correctly between pods on multiple nodes when using PreferClose": true,
	} {
		c, reason := sel.Classify(spec)
		if !c || (reason != "") != wantSkip {
			t.Errorf("%s: candidate %v, skip %q; want skipped=%v", spec, c, reason, wantSkip)
		}
	}
	if c, _ := sel.Classify("[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http [Conformance] [NodeConformance]"); c {
		t.Error("pod-to-pod checks are not a proxy's")
	}
}
