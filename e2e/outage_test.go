package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestAPIServerOutage: while the apiserver is down the programmed state stays and keeps
// serving; once it is back the daemon catches up with a change made after the restart.
func TestAPIServerOutage(t *testing.T) {
	requireEnv(t)
	_, vip := createProgrammed(t, service("outage"), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	cp.StopAPIServer()
	apiUp := false
	defer func() {
		if !apiUp {
			_ = cp.StartAPIServer()
		}
	}()
	// ~25 s of outage: longer than minSyncPeriod, the informers' first retries and two
	// probe intervals. Traffic flows throughout, the pod says it is not ready and why,
	// and /livez stays 200 (no restart loop).
	var ready harness.HTTPResult
	for i := range 25 {
		if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod1") {
			t.Fatalf("during the outage: %q %v", a, err)
		}
		if i > 20 {
			ready, _ = node.Get("", "http://127.0.0.1:10256/readyz")
			if r, err := node.Get("", "http://127.0.0.1:10256/livez"); err != nil || r.Code != 200 {
				t.Errorf("/livez during the outage: %+v %v", r, err)
			}
		}
		time.Sleep(time.Second)
	}
	if ready.Code != 503 || !strings.Contains(ready.Body, "the API server is unreachable") {
		t.Errorf("/readyz during the outage: %+v", ready)
	}
	if log, _ := node.MustExec("grep -c 'the programmed state is kept' /tmp/daemon.log"); strings.TrimSpace(log) == "0" {
		t.Errorf("no log line about the unreachable API server")
	}
	if out := ipvsadm(t); !strings.Contains(vsBlock(out, vip), "10.244.0.11") {
		t.Fatalf("state lost during the outage:\n%s", out)
	}
	if err := cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	apiUp = true
	setEndpoints(t, "outage", 80, v1.ProtocolTCP, podEP{"10.244.0.12", "node-1"})
	var last string
	if err := waitFor(60*time.Second, func() bool {
		last = ipvsadm(t)
		b := vsBlock(last, vip)
		return strings.Contains(b, "10.244.0.12:80               Masq    1") && !strings.Contains(b, "10.244.0.11:80               Masq    1")
	}); err != nil {
		t.Fatalf("daemon did not catch up after the outage:\n%s", last)
	}
	if err := waitFor(30*time.Second, func() bool {
		r, err := node.Get("", "http://127.0.0.1:10256/readyz")
		return err == nil && r.Code == 200
	}); err != nil {
		t.Errorf("not ready again 30 s after the apiserver came back")
	}
}
