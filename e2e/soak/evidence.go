package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// failuresFile is where a run keeps what the node held at its failed requests.
const failuresFile = "failures.log"

// evidence records, at a failed request, what the node held for the flow's target: its
// virtual server with the real servers, IPVS's connection entries and persistence
// templates for it, conntrack's entries for it, whether the address is still bound, and
// the daemon's last log lines. Each loop's first few failures are kept (trafficLoop
// calls it as it logs them), so that a failure's cause can be read from the results.
type evidence struct {
	node *harness.Node
	path string
	mu   sync.Mutex
}

// newEvidence starts the run's failures file afresh: one from an earlier run in the
// same folder would read as this run's.
func newEvidence(node *harness.Node, dir string) *evidence {
	path := filepath.Join(dir, failuresFile)
	_ = os.MkdirAll(dir, 0o755)
	_ = os.Remove(path)
	return &evidence{node: node, path: path}
}

// captureCommand is the shell the node runs for a failed request to target over proto.
func captureCommand(proto, target string) string {
	host, _, _ := net.SplitHostPort(target)
	flag := "-t"
	if proto == "udp" {
		flag = "-u"
	}
	return strings.Join([]string{
		fmt.Sprintf("echo '# ipvsadm -Ln %s %s --stats'; ipvsadm -Ln %s %s --stats 2>&1", flag, target, flag, target),
		// TIME_WAIT entries are the loop's finished requests: counted, not listed, so that
		// the failed one (SYN_RECV, SYN_SENT) and the persistence template (NONE) show.
		fmt.Sprintf("echo '# ipvsadm -Lnc (%s), TIME_WAIT counted'; ipvsadm -Lnc > /tmp/soak-conns 2>&1; grep -F ' %s:' /tmp/soak-conns | grep -c TIME_WAIT; grep -F ' %s:' /tmp/soak-conns | grep -v TIME_WAIT | head -n 40", host, host, host),
		fmt.Sprintf("echo '# conntrack -L -d %s, TIME_WAIT counted'; conntrack -L -d %s > /tmp/soak-ct 2>&1; grep -c TIME_WAIT /tmp/soak-ct; grep -v TIME_WAIT /tmp/soak-ct | head -n 40", host, host),
		fmt.Sprintf("echo '# ip -o addr (%s)'; ip -o addr 2>&1 | grep -F ' %s/' ", host, host),
		"echo '# daemon log'; tail -n 60 /tmp/daemon.log",
	}, "; ")
}

// capture runs the capture on the node and appends it, headed by the failure, to the
// run's failures file.
func (e *evidence) capture(f flow, at time.Time, failure error) {
	out, _, err := e.node.Exec(captureCommand(f.Proto, f.Target))
	if err != nil {
		out = "capture failed: " + err.Error()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	file, err := os.OpenFile(e.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer file.Close()
	fmt.Fprintf(file, "=== %s %s %s %s: %v (captured %s)\n%s\n", at.Format("15:04:05.000"), f.Name, f.Proto, f.Target, failure,
		time.Now().Format("15:04:05.000"), out)
}
