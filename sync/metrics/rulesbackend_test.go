package metrics_test

import (
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
)

// TestRulesBackendMetric: ipvs_proxier_rules_backend names the backend in use, and is
// absent when none is given.
func TestRulesBackendMetric(t *testing.T) {
	m := metrics.New(metrics.Sources{RulesBackend: "nftables"})
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		if f.GetName() != "ipvs_proxier_rules_backend" {
			continue
		}
		for _, s := range f.GetMetric() {
			if l := s.GetLabel(); len(l) == 1 && l[0].GetName() == "backend" && l[0].GetValue() == "nftables" && s.GetGauge().GetValue() == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Error("no ipvs_proxier_rules_backend{backend=\"nftables\"} 1")
	}
	fams, _ = metrics.New(metrics.Sources{}).Registry.Gather()
	for _, f := range fams {
		if f.GetName() == "ipvs_proxier_rules_backend" {
			t.Error("exported with no backend given")
		}
	}
}
