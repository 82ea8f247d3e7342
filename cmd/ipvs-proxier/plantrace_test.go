package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlanTrace: plan --trace follows one packet through what the daemon's sync wrote to
// plan's fake kernel, with either rules backend: the rules that matched, then IPVS's
// real servers, or the verdict that stopped it. A source of the node's (100.101.102.103,
// the Node's InternalIP) is the node's own traffic; a malformed packet is an error.
func TestPlanTrace(t *testing.T) {
	for _, backend := range []string{"iptables", "nftables"} {
		for _, c := range []struct{ trace, from, want string }{
			{"10.244.0.7 10.96.0.10:80/tcp", "via eth0", "=> ipvs 10.244.0.5:8080,10.244.1.5:8080\n"},
			{"10.244.0.7 10.96.0.53:53/udp", "via eth0", "=> ipvs 10.244.1.53:53\n"},
			{"10.244.0.7 10.96.0.10:22/tcp", "via eth0", "=> reject\n"},
			{"100.101.102.103 10.96.0.10:22/tcp", "via node", "=> reject\n"},
			{"100.101.102.103 10.96.0.10:80/tcp", "via node", "=> ipvs 10.244.0.5:8080,10.244.1.5:8080\n"},
			{"fd00:244::9 [fd00:96::10]:80/tcp", "via eth0", "=> ipvs [fd00:244::5]:8080\n"},
			{"10.244.0.7 203.0.113.9:443/tcp", "via eth0", "=> forward\n"},
		} {
			var out, errOut bytes.Buffer
			err := runPlanTo([]string{"-f", "../../examples/cluster.yaml", "--hostname-override", "test-node",
				"--rules-backend", backend, "--trace", c.trace}, &out, &errOut)
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", backend, c.trace, err, errOut.String())
			}
			_, got, ok := strings.Cut(out.String(), "\n# trace ")
			header, steps, _ := strings.Cut(got, "\n")
			if !ok || !strings.HasSuffix(header, c.from) || !strings.HasSuffix(got, c.want) || !strings.Contains(steps, "KUBE-SERVICES") {
				t.Errorf("%s --trace %q: got\n%s\nwant a packet %s, the rules it matched (KUBE-SERVICES) and %q", backend, c.trace, got, c.from, c.want)
			}
		}
	}
	for _, bad := range []string{"10.244.0.7", "10.244.0.7 10.96.0.10:80", "10.244.0.7 10.96.0.10:80/icmp", "10.244.0.7 [fd00::1]:80/tcp"} {
		var out, errOut bytes.Buffer
		if err := runPlanTo([]string{"-f", "../../examples/cluster.yaml", "--hostname-override", "test-node", "--trace", bad}, &out, &errOut); err == nil {
			t.Errorf("--trace %q: no error", bad)
		}
	}
}
