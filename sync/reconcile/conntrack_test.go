package reconcile

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestConntrackReconcileUDP: a full sync deletes the UDP flows to our virtual servers
// whose DNAT target is not one of its real servers (the delete event that should have
// cleared them was lost), keeps the rest and flows to addresses that are not ours, runs
// at most once per SyncPeriod, and counts what it deleted as kube-proxy does.
func TestConntrackReconcileUDP(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	h, m, _ := newObservedHarness(t, kernel.Kernel{}, nil, func() time.Time { return now })
	h.src.SetService(svc("ns", "dns", "10.96.0.53", 53, v1.ProtocolUDP))
	h.src.SetSlice(slice("ns", "dns", "dns-1", 53, v1.ProtocolUDP, "10.244.0.11"))
	ap := netip.MustParseAddrPort
	h.fake.AddFlow(ap("10.96.0.53:53"), ap("10.244.0.11:53")) // live
	h.fake.AddFlow(ap("10.96.0.53:53"), ap("10.244.0.99:53")) // its endpoint is gone
	h.fake.AddFlow(ap("10.96.9.9:53"), ap("10.244.0.99:53"))  // not a virtual server of ours
	h.mustSync(t)
	want := []string{"10.96.0.53:53>10.244.0.11:53", "10.96.9.9:53>10.244.0.99:53"}
	if got := h.fake.Flows(); !slices.Equal(got, want) {
		t.Errorf("after the first full sync: %v, want %v", got, want)
	}
	f := scrape(t, m)
	if v, _ := f.Value("kubeproxy_conntrack_reconciler_deleted_entries_total", map[string]string{"ip_family": "IPv4"}); v != 1 {
		t.Errorf("deleted_entries_total{IPv4} = %v, want 1", v)
	}
	if v, ok := f.Value("kubeproxy_conntrack_reconciler_deleted_entries_total", map[string]string{"ip_family": "IPv6"}); !ok || v != 0 {
		t.Errorf("deleted_entries_total{IPv6} = %v (present %v), want 0", v, ok)
	}

	// Another full sync within SyncPeriod does not read the table again.
	h.fake.AddFlow(ap("10.96.0.53:53"), ap("10.244.0.98:53"))
	h.fake.ResetOps()
	now = now.Add(time.Second)
	h.tracker.AllChanged()
	h.mustSync(t)
	if n := h.fake.Ops()["ReconcileUDP"]; n != 0 {
		t.Errorf("reconciled %d times within SyncPeriod", n)
	}
	now = now.Add(30 * time.Second)
	h.tracker.AllChanged()
	h.mustSync(t)
	if got := h.fake.Flows(); !slices.Equal(got, want) {
		t.Errorf("after SyncPeriod: %v, want %v", got, want)
	}
}
