package main

import (
	"strings"
	"testing"
)

// TestCaptureCommand: the capture asks about the failed flow's own virtual server, in
// its protocol, and about its address in the connection tables.
func TestCaptureCommand(t *testing.T) {
	for _, c := range []struct{ proto, target, want, not string }{
		{"tcp", "10.96.0.12:80", "ipvsadm -Ln -t 10.96.0.12:80 --stats", "-u 10.96.0.12"},
		{"udp", "192.168.122.10:30080", "ipvsadm -Ln -u 192.168.122.10:30080 --stats", "-t 192.168.122.10"},
	} {
		cmd := captureCommand(c.proto, c.target)
		host := strings.Split(c.target, ":")[0]
		for _, w := range []string{c.want, "grep -F ' " + host + ":'", "conntrack -L -d " + host + " ", "grep -v TIME_WAIT", "tail -n 60 /tmp/daemon.log"} {
			if !strings.Contains(cmd, w) {
				t.Errorf("%s %s: %q lacks %q", c.proto, c.target, cmd, w)
			}
		}
		if strings.Contains(cmd, c.not) {
			t.Errorf("%s %s: %q asks about the other protocol", c.proto, c.target, cmd)
		}
	}
}
