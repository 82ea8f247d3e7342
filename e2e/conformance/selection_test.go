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
		"[sig-network] Traffic Distribution should route traffic to an endpoint in the same zone when using PreferClose":          true,
		"[sig-network] [Feature:IPv6DualStack] should create a single stack service with cluster ip from primary service range":   true,
	} {
		c, reason := sel.Classify(spec)
		if !c || (reason != "") != wantSkip {
			t.Errorf("%s: candidate %v, skip %q; want skipped=%v", spec, c, reason, wantSkip)
		}
	}
	for _, tc := range []struct {
		shape, spec string
		skip        bool
	}{
		{"ipv4", "[sig-network] [Feature:IPv6DualStack] should create service with ipv6,v4 cluster ip", true},
		{"dual-stack", "[sig-network] [Feature:IPv6DualStack] should create service with ipv6,v4 cluster ip", false},
		{"ipv6-first", "[sig-network] [Feature:IPv6DualStack] should create service with ipv6,v4 cluster ip", false},
		{"dual-stack", "[sig-network] Traffic Distribution should route traffic to an endpoint in the same zone when using PreferClose", true},
		{"three-zones", "[sig-network] Traffic Distribution should route traffic to an endpoint in the same zone when using PreferClose", false},
		{"three-zones", "[sig-network] Traffic Distribution should route traffic to an endpoint on the same node when using PreferSameNode and fall back when the endpoint becomes unavailable", false},
		{"three-zones", "[sig-network] Traffic Distribution should route traffic correctly between pods on multiple nodes when using PreferSameZone", true},
		{"three-zones", "[sig-network] Traffic Distribution should route traffic to an endpoint on the same node or fall back to same zone when using PreferSameNode", true},
	} {
		c, reason := sel.ForShape(tc.shape).Classify(tc.spec)
		if !c || (reason != "") != tc.skip {
			t.Errorf("%s: %s: candidate %v, skip %q; want skipped=%v", tc.shape, tc.spec, c, reason, tc.skip)
		}
	}
	if _, err := ParseSelection([]byte("focus x\nskip[ipv5] y -- z\n")); err == nil {
		t.Error("a rule for an unknown shape accepted")
	}
	if c, _ := sel.Classify("[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http [Conformance] [NodeConformance]"); c {
		t.Error("pod-to-pod checks are not a proxy's")
	}
}
