package metrics_test

import (
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
)

// TestTransactionMetrics: the nftables transaction metrics read the backend's counts at
// scrape time, and are absent without a source (the iptables backend).
func TestTransactionMetrics(t *testing.T) {
	tx := metrics.Transactions{Count: 3, LargestMembers: 1000, Longest: 12 * time.Millisecond}
	m := metrics.New(metrics.Sources{Transactions: func() metrics.Transactions { return tx }})
	tx.Count = 231 // read at scrape time, not at registration
	want := map[string]float64{
		"ipvs_proxier_nftables_transactions_total":          231,
		"ipvs_proxier_nftables_transaction_max_members":     1000,
		"ipvs_proxier_nftables_transaction_longest_seconds": 0.012,
	}
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		w, ok := want[f.GetName()]
		if !ok {
			continue
		}
		delete(want, f.GetName())
		s := f.GetMetric()[0]
		if got := s.GetCounter().GetValue() + s.GetGauge().GetValue(); got != w {
			t.Errorf("%s = %v, want %v", f.GetName(), got, w)
		}
	}
	if len(want) != 0 {
		t.Errorf("not exported: %v", want)
	}
	fams, _ = metrics.New(metrics.Sources{}).Registry.Gather()
	for _, f := range fams {
		if f.GetName() == "ipvs_proxier_nftables_transactions_total" {
			t.Error("exported with no source")
		}
	}
}
