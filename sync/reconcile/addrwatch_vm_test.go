package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
)

// TestFullSyncWatchedAddressesRealKernel: on the VM's kernel, with the real address
// watch feeding the syncer, light full syncs stop dumping kube-ipvs0's addresses once
// the notifications of our own binds are in, and an `ip addr del` on it by hand is
// reported by the kernel and repaired by the next full sync.
func TestFullSyncWatchedAddressesRealKernel(t *testing.T) {
	s, src, full := vmLookupSyncer(t)
	done := make(chan struct{})
	defer close(done)
	if err := linux.WatchAddresses("kube-ipvs0", done, func() {}, s.DummyAddressesChanged); err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		src.SetService(svc("bench", name, fmt.Sprintf("10.97.0.%d", i+1), 80, v1.ProtocolTCP))
		src.SetSlice(slice("bench", name, name+"-1", 8080, v1.ProtocolTCP, fmt.Sprintf("10.244.0.%d", i+1)))
	}
	addrs := "ip -o addr show dev kube-ipvs0 | awk '{print $4}' | sort"
	full() // the first: dumps, and binds the addresses (each notified back)
	want := sh(t, addrs)
	if got := strings.Count(want, "10.97.0."); got != n {
		t.Fatalf("%d addresses bound, want %d", got, n)
	}
	quiet := false
	for i := 0; i < 10 && !quiet; i++ {
		time.Sleep(200 * time.Millisecond) // for the notifications of our binds
		full()
		quiet = !s.dumpedAddrs && !s.dumpedAll
	}
	if !quiet {
		t.Fatal("every light full sync dumped the addresses with the watch open")
	}
	sh(t, "ip addr del 10.97.0.9/32 dev kube-ipvs0")
	for deadline := time.Now().Add(5 * time.Second); !s.addrs.Changed(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not report the address removed by hand")
		}
	}
	full()
	if !s.dumpedAddrs {
		t.Error("the full sync after the report did not dump the addresses")
	}
	if got := sh(t, addrs); got != want {
		t.Errorf("`ip addr del` on kube-ipvs0 not repaired by the next full sync:\n%s", got)
	}
}
