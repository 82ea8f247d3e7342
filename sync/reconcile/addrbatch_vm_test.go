package reconcile

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestAddressBatchRealKernel: on the VM's kernel, a full sync with more than
// backgroundAddresses address writes queued sends them from the background batch
// (addrbatch.go) while it writes the sets and virtual servers, and has every one of
// them bound when it returns; deleting every Service unbinds them the same way.
// The unit tests order the batch against the other writes with a fake kernel; this
// one has the real kernel take binds from one goroutine and ipset and IPVS writes
// from another.
func TestAddressBatchRealKernel(t *testing.T) {
	s, src, full := vmLookupSyncer(t)
	core, logs := observer.New(zapcore.InfoLevel)
	s.log = zap.New(core)
	n := backgroundAddresses + 100
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		ip := fmt.Sprintf("10.98.%d.%d", i/250, i%250+1)
		src.SetService(svc("batch", name, ip, 80, v1.ProtocolTCP))
		src.SetSlice(slice("batch", name, name+"-1", 8080, v1.ProtocolTCP, fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)))
	}
	bound := func() int {
		out := sh(t, "ip -o -4 addr show dev kube-ipvs0 | grep -c ' 10\\.98\\.' || true")
		c, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("counting the addresses: %q", out)
		}
		return c
	}
	batches := func(writes int) {
		t.Helper()
		var got []observer.LoggedEntry // this sync's: TakeAll empties logs, not a filtered copy
		for _, e := range logs.TakeAll() {
			if e.Message == "Addresses written alongside the sets and virtual servers" {
				got = append(got, e)
			}
		}
		if len(got) != 1 || got[0].ContextMap()["writes"] != int64(writes) {
			t.Errorf("batch log lines %v, want one with %d writes", got, writes)
		}
	}

	full()
	batches(n)
	if got := bound(); got != n {
		t.Errorf("%d ClusterIPs bound after the full sync, want %d", got, n)
	}
	if got := strings.Count(sh(t, "ipvsadm -Ln"), "TCP  10.98."); got != n {
		t.Errorf("%d virtual servers, want %d", got, n)
	}
	if got := strings.Count(sh(t, "ipset list KUBE-CLUSTER-IP"), ",tcp:80"); got != n {
		t.Errorf("%d KUBE-CLUSTER-IP members, want %d", got, n)
	}

	for i := range n {
		key := proxier.ServiceKey{Namespace: "batch", Name: fmt.Sprintf("svc-%d", i)}
		src.DeleteService(key)
		s.tracker.ServiceChanged(key)
	}
	full()
	batches(n)
	if got := bound(); got != 0 {
		t.Errorf("%d ClusterIPs still bound after every Service was deleted", got)
	}
	if got := strings.Count(sh(t, "ipvsadm -Ln"), "TCP  10.98."); got != 0 {
		t.Errorf("%d virtual servers left after every Service was deleted", got)
	}
}
