package metrics_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics/metricstest"
	"github.com/ipvs-proxier/ipvs-proxier/sync/pressure"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// TestDashboardUsesRealMetrics: every metric deploy/grafana-dashboard.json queries is one
// the daemon exports, so a renamed metric cannot leave an empty panel behind.
func TestDashboardUsesRealMetrics(t *testing.T) {
	b, err := os.ReadFile("../../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}

	// Everything the daemon registers, each made to emit at least one sample.
	m := metrics.New(metrics.Sources{
		Counts: func() metrics.Counts { return metrics.Counts{} }, Draining: func() int { return 0 },
		Pending: func() (int, int) { return 0, 0 }, ChangesTotal: func() (uint64, uint64) { return 0, 0 },
		NoLocal: func(kernel.Family) (int, int) { return 0, 0 },
	})
	key := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 443}
	m.Register(&metrics.VSCollector{
		Stats: func() (*ipvs.VSStats, bool) {
			return &ipvs.VSStats{Busiest: []ipvs.OwnedStats{{Key: key, Owner: ipvs.Owner{Namespace: "default", Name: "kubernetes"}}}, Owned: 1}, false
		},
	})
	mon := pressure.New(func() (kernel.ConntrackStats, error) { return kernel.ConntrackStats{Max: 10}, nil }, 0.8, nil, nil, nil)
	mon.Sample()
	m.Register(mon)
	m.Healthz(200)
	m.Livez(200)
	m.KernelHooks().After("AddRealServer", errors.New("boom"))
	m.ObserveSync(true, time.Millisecond, nil, time.Now())
	fams, err := metricstest.Scrape(m.Registry)
	if err != nil {
		t.Fatal(err)
	}

	name := regexp.MustCompile(`\b((?:kubeproxy|ipvs|process)_[a-z_]+)\{`)
	used := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, match := range name.FindAllStringSubmatch(tg.Expr, -1) {
				n := match[1]
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base := strings.TrimSuffix(n, suffix); base != n && fams[base] != nil {
						n = base
					}
				}
				if fams[n] == nil {
					t.Errorf("panel %q queries %s, which the daemon does not export", p.Title, match[1])
				}
				used++
			}
		}
	}
	if used < 20 {
		t.Errorf("only %d metric references found; is the regexp still right?", used)
	}
}
