package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/loadgen"
)

func row(n int, proxy string, rps, connectP99, kaRPS float64) result {
	return result{Services: n, Proxy: proxy, Run: 1, Ready: 5 * time.Second,
		Short:     loadgen.Result{RPS: rps, Connect: loadgen.Percentiles{P50: 1, P99: connectP99, P999: 2 * connectP99}},
		KeepAlive: loadgen.Result{RPS: kaRPS}, Hairpin: map[string]loadgen.Result{hpDirect: {Mbps: 900}, hpClusterIP: {Mbps: 800}}}
}

// based is r with its pods-directly baseline.
func based(r result, baseline float64) result {
	r.Baseline.RPS = baseline
	return r
}

func TestRatios(t *testing.T) {
	rs := []result{
		// Equal through the Service, but kube-proxy's run met a slower VM (its baseline):
		// relative to the pods directly, ours is 0.9 of it.
		based(row(1000, "ipvs-proxier", 1000, 2, 3000), 2000),
		based(row(1000, "kube-proxy", 1000, 2, 3000), 1800),
		row(1000, "kube-proxy iptables", 900, 2, 3000),
		row(30000, "ipvs-proxier", 2000, 9, 1000), // an outlier the median leaves out
		row(30000, "kube-proxy", 900, 2, 3000),
		row(30000, "ipvs-proxier", 940, 2.4, 3000), // the median: below both own-scale targets
		row(30000, "kube-proxy iptables", 100, 20, 1000),
		row(30000, "ipvs-proxier", 893, 2.3, 3000),
		row(1000, "ipvs-proxier"+stoppedSuffix, 1000, 2, 3000),
		row(30000, "ipvs-proxier"+stoppedSuffix, 990, 2.1, 3000),
		row(30000, "ipvs-proxier"+bareSuffix, 1100, 2.1, 3000),
		{Services: 30000, Proxy: "kube-proxy nftables", Notes: []string{"not ready within 30m0s"}},
		row(30000, "kube-proxy"+adoptSuffix, 1000, 2, 3000),
		row(30000, "kube-router", 1880, 2, 3000),
	}
	got := map[string]ratio{}
	for _, r := range ratios(rs) {
		got[r.what] = r
	}
	for what, want := range map[string]struct {
		v   float64
		met string
	}{
		"ipvs-proxier short-connection req/s, 30000 ÷ 1000 Services":                                          {0.94, "no"},
		"ipvs-proxier connect p99, 30000 ÷ 1000 Services":                                                     {1.2, "no"},
		"short-connection req/s, ipvs-proxier ÷ kube-proxy IPVS, 1000 Services":                               {1, "yes"},
		"short-connection req/s ÷ pods directly, ipvs-proxier ÷ kube-proxy IPVS, 1000 Services":               {0.9, "no"},
		"short-connection req/s, ours stopped with ÷ without the rules kube-proxy IPVS lacks, 30000 Services": {0.9, ""},
		"short-connection req/s, ipvs-proxier ÷ kube-proxy IPVS, 30000 Services":                              {940.0 / 900, "yes"},
		"short-connection req/s, ipvs-proxier ÷ kube-proxy iptables, 30000 Services":                          {9.4, ""},
		"short-connection req/s, ipvs-proxier ÷ kube-proxy IPVS, adopting ours' state, 30000 Services":        {0.94, "no"},
		"keep-alive req/s, ipvs-proxier ÷ kube-proxy IPVS, adopting ours' state, 30000 Services":              {1, "yes"},
		"keep-alive req/s, ipvs-proxier ÷ kube-proxy iptables, 30000 Services":                                {3, ""},
		"short-connection req/s, ipvs-proxier ÷ kube-router, 30000 Services":                                  {0.5, ""},
		"connect p99, ipvs-proxier ÷ kube-proxy iptables, 30000 Services":                                     {0.12, ""},
		"ipvs-proxier: short-connection req/s, highest ÷ lowest of 3 runs, 30000 Services (the VM's drift)":   {2000.0 / 893, ""},
	} {
		r, ok := got[what]
		if !ok {
			t.Errorf("no ratio %q; have %v", what, got)
			continue
		}
		if d := r.value - want.v; d > 1e-9 || d < -1e-9 || r.met != want.met {
			t.Errorf("%s: %v met %q, want %v %q", what, r.value, r.met, want.v, want.met)
		}
	}
	for what := range got {
		if strings.Contains(what, "nftables") {
			t.Errorf("a ratio with a proxy that measured nothing: %s", what)
		}
	}
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	again := row(1000, "ipvs-proxier", 1000, 3, 3000)
	again.Run = 2
	rs := []result{based(row(1000, "ipvs-proxier", 1234, 2.5, 3000), 2000), again,
		{Services: 1000, Proxy: "kube-proxy nftables", Notes: []string{"not ready within 30m0s: no completed sync yet"}}}
	s := settings{sizes: []int{1000}, endpoints: 4, load: 30 * time.Second, warmup: 5 * time.Second, workers: 8, stream: 10 * time.Second}
	if err := writeReport(dir, "test machine", s, rs); err != nil {
		t.Fatal(err)
	}
	benchkit.CheckReport(t, dir, "dataplane.md", []string{"| 1000 | ipvs-proxier | 5 | 2000 | 1234 | 0.62 | 1.00 / 2.50 / 5.00 |", "| 1000 | kube-proxy nftables | not ready |",
		"| 1000 | ipvs-proxier | 900 | 800 | 0 | 0 |", "| 1000 | ipvs-proxier (run 2) | 5 | 0 | 1000 |  |", "kube-proxy nftables @ 1000: not ready within 30m0s", "DP_SIZES=1000", "test machine"},
		"dataplane.csv", 4, "dataplane.png")
}

func TestSynced(t *testing.T) {
	for _, tc := range []struct {
		name, metrics string
		want          bool
	}{
		{"none", "# HELP x\nkubeproxy_sync_proxy_rules_duration_seconds_count 3\n", false},
		{"zero", "kubeproxy_sync_proxy_rules_last_timestamp_seconds 0\n", false},
		{"plain", "kubeproxy_sync_proxy_rules_last_timestamp_seconds 1.7649e+09\n", true},
		{"labelled", "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"} 1.7649e+09\n", true},
		{"a longer name", "kubeproxy_sync_proxy_rules_last_timestamp_seconds_other 5\n", false},
	} {
		if got := synced(tc.metrics); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
