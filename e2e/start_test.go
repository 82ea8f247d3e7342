package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestConntrackTimeouts: on a node whose conntrack timeouts are the kernel's defaults,
// as after a reboot, the daemon started as deploy/ runs it sets kube-proxy's (24h
// established, 1h close-wait: pkg/proxy/apis/config/v1alpha1/defaults.go) and logs each
// change; the UDP ones, 0 by default, are left as they are.
func TestConntrackTimeouts(t *testing.T) {
	requireEnv(t)
	const ct = "/proc/sys/net/netfilter/nf_conntrack_"
	keys := []string{"tcp_timeout_established", "tcp_timeout_close_wait", "udp_timeout", "udp_timeout_stream"}
	read := func() []string {
		t.Helper()
		var cmd []string
		for _, k := range keys {
			cmd = append(cmd, "cat "+ct+k)
		}
		out, err := node.MustExec(strings.Join(cmd, "; "))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(out)
	}
	orig := read()
	t.Cleanup(func() {
		for i, k := range keys[2:] {
			_, _ = node.MustExec(fmt.Sprintf("echo %s > %s%s", orig[i+2], ct, k))
		}
	})
	stopDaemon(t)
	// Kernel 6.1's defaults for the TCP ones (5 days, 60 s); odd values for the UDP ones,
	// so that a write of any default would show.
	set := []string{"432000", "60", "31", "121"}
	for i, k := range keys {
		if _, err := node.MustExec(fmt.Sprintf("echo %s > %s%s", set[i], ct, k)); err != nil {
			t.Fatal(err)
		}
	}
	lines, _ := node.MustExec("wc -l < /tmp/daemon.log || echo 0")
	startDaemon(t)
	if got, want := strings.Join(read(), " "), "86400 3600 31 121"; got != want {
		t.Errorf("conntrack timeouts after start: %s, want %s (established, close-wait, udp, udp-stream)", got, want)
	}
	// This start's lines only (the log is appended to across restarts).
	log, _ := node.MustExec(fmt.Sprintf(`tail -n +%d /tmp/daemon.log | grep '"Sysctl changed"' | grep nf_conntrack_tcp_timeout`,
		atoi(strings.TrimSpace(lines))+1))
	if !strings.Contains(log, `"old":432000,"new":86400`) || !strings.Contains(log, `"old":60,"new":3600`) {
		t.Errorf("changes not logged:\n%s", log)
	}
}

// TestBindRetry: with the health port held by another process for 10 s (the old pod
// during a takeover), the daemon says so, retries every 5 s as kube-proxy does, and
// serves /readyz once the port is free, without a restart.
func TestBindRetry(t *testing.T) {
	requireEnv(t)
	stopDaemon(t)
	lines, _ := node.MustExec("wc -l < /tmp/daemon.log || echo 0")
	// A persistent listener on 0.0.0.0:10256 that closes every connection at once.
	if _, err := node.MustExec("(timeout 10 nc -ll -p 10256 -e /bin/true >/dev/null 2>&1 &); sleep 1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	startDaemon(t)
	t.Logf("/readyz answered %v after the start, the port held 10 s", time.Since(start).Round(time.Second))
	log, _ := node.MustExec(fmt.Sprintf(`tail -n +%d /tmp/daemon.log | grep -c '"Cannot serve health; retrying"'`,
		atoi(strings.TrimSpace(lines))+1))
	if n := atoi(strings.TrimSpace(log)); n < 1 {
		t.Errorf("no retry logged while the port was held (%q)", log)
	}
}

// TestStartingEvent: each start puts kube-proxy's Normal "Starting" Event on the Node.
func TestStartingEvent(t *testing.T) {
	requireEnv(t)
	stopDaemon(t)
	start := nodeNow(t)
	startDaemon(t)
	ev, err := nodeEvent(t, "Starting", start)
	if err != nil {
		t.Fatal("no Starting Event on the Node after a start")
	}
	if ev.Type != "Normal" || !strings.HasPrefix(ev.Message, "StartKubeProxy: ipvs-proxier ") {
		t.Errorf("event %s %q", ev.Type, ev.Message)
	}
}
