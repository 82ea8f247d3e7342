package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIServerOutage: while the apiserver is down the programmed state stays and keeps
// serving; once it is back the daemon catches up with a change made after the restart.
func TestAPIServerOutage(t *testing.T) {
	requireEnv(t)
	svc := createService(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "outage"}}, 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	vip := svc.Spec.ClusterIP + ":80"
	waitIPVS(t, "created", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.11") })
	cp.StopAPIServer()
	apiUp := false
	defer func() {
		if !apiUp {
			_ = cp.StartAPIServer()
		}
	}()
	for range 10 { // ~10 s of outage, longer than minSyncPeriod and the informers' first retries
		if a, err := node.Ask("client", "tcp", vip); err != nil || !strings.HasPrefix(a, "pod1") {
			t.Fatalf("during the outage: %q %v", a, err)
		}
		time.Sleep(time.Second)
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
}
