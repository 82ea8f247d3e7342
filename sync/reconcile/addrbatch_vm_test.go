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
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/addrs"
)

// TestAddressBatchRealKernel: on the VM's kernel, a full sync with more than
// addrs.BackgroundAddresses address writes queued sends them from the background batch
// (addrs/batch.go) while it writes the sets and virtual servers, and has every one of
// them bound when it returns; deleting every Service unbinds them the same way. The
// first full sync's set members go in a background batch too (sets/batch.go, its
// threshold lowered), and every one of them is in its set when the sync returns.
// The unit tests order the batches against the other writes with a fake kernel; this
// one has the real kernel take binds and set members from other goroutines than the
// IPVS writes.
func TestAddressBatchRealKernel(t *testing.T) {
	lowerBackgroundMembers(t, 1000)
	core, logs := observer.New(zapcore.InfoLevel)
	s, src, full := vmLookupSyncerLogging(t, zap.New(core))
	n := addrs.BackgroundAddresses + 100
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
	// batches checks this sync's log (TakeAll empties it): one address batch of writes,
	// and memberBatches member batches.
	batches := func(writes, memberBatches int) {
		t.Helper()
		var got, members []observer.LoggedEntry
		for _, e := range logs.TakeAll() {
			switch e.Message {
			case "Addresses written alongside the sets and virtual servers":
				got = append(got, e)
			case "Set members written alongside the virtual servers":
				members = append(members, e)
			}
		}
		if len(got) != 1 || got[0].ContextMap()["writes"] != int64(writes) {
			t.Errorf("batch log lines %v, want one with %d writes", got, writes)
		}
		if len(members) != memberBatches {
			t.Errorf("member batch log lines %v, want %d", members, memberBatches)
		}
	}

	full()
	batches(n, 1)
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
	batches(n, 0)
	if got := bound(); got != 0 {
		t.Errorf("%d ClusterIPs still bound after every Service was deleted", got)
	}
	if got := strings.Count(sh(t, "ipvsadm -Ln"), "TCP  10.98."); got != 0 {
		t.Errorf("%d virtual servers left after every Service was deleted", got)
	}
}
