package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// TestReport: the table, CSV and chart come out of a set of rows, unfinished ones
// included.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BENCH_PROXIES_1000", "ipvs-proxier,kube-proxy")
	t.Setenv("BENCH_PROXIES_5000", "ipvs-proxier nftables")
	t.Setenv("BENCH_OUT", dir)
	rs := []result{
		{Services: 1000, Endpoints: 4, Proxy: "ipvs-proxier", ColdStart: 3 * time.Second, Critical: 1200 * time.Millisecond, SetsDone: 3 * time.Second, P50: 900 * time.Millisecond, P99: 1500 * time.Millisecond, Changes: 52, SteadyRSS: 40, PeakRSS: 60, VS: 1501, RS: 6000},
		{Services: 1000, Endpoints: 4, Proxy: "kube-proxy", ColdStart: 9 * time.Second, P50: 1100 * time.Millisecond, P99: 2500 * time.Millisecond, Changes: 52, SteadyRSS: 80, PeakRSS: 90},
		{Services: 5000, Endpoints: 4, Proxy: "kube-proxy", ClusterPorts: 412, Notes: []string{"cold start unfinished after 20m0s"}},
		{Services: 5000, Endpoints: 4, Proxy: "kube-router", ColdStart: 40 * time.Second, Probed: 20, Answered: 20, SetsDone: 41 * time.Second},
	}
	if err := writeReport(dir, "test machine", (&benchkit.Workload{}).Describe(), []int{1000, 5000}, rs); err != nil {
		t.Fatal(err)
	}
	benchkit.CheckReport(t, dir, "results.md", []string{"| 1000 × 4 | ipvs-proxier | 3.0 | — | 1.2 | 3.0 | 900 | 1500 | 52 | 40 / 60 |", "| 1000 × 4 | kube-proxy | 9.0 | — | — |",
		"| 5000 × 4 | kube-proxy | unfinished: 412 of 5000 ClusterIP ports programmed | — |", "| 5000 × 4 | kube-router | 40.0 | 20 / 20 |", "predates its externalIPs advisory GHSA-phqm-jgc3-qf8g (fixed in v2.8.0)",
		"kube-proxy @ 5000: cold start unfinished", "`SVC_SCALE_STEPS=1000,5000 BENCH_PROXIES_1000=ipvs-proxier,kube-proxy BENCH_PROXIES_5000=\"ipvs-proxier nftables\" make bench-scale`", "test machine"},
		"results.csv", 5, "chart.png")
	rows, err := benchkit.ReadCSV([]string{dir + "/results.csv"})
	if err != nil || !strings.HasPrefix(rows[3]["notes"], benchkit.KubeRouterCaveat) || rows[2]["notes"] != "cold start unfinished after 20m0s" {
		t.Errorf("the CSV's notes should carry kube-router's caveat, and only on its rows: %v %v", err, rows)
	}
}

// TestPollPause: the cold start looks at the kernel every second, or three times as
// seldom as one look takes, so looking never takes more than a quarter of the time.
func TestPollPause(t *testing.T) {
	for _, c := range []struct{ took, want time.Duration }{
		{50 * time.Millisecond, time.Second},
		{time.Second, 3 * time.Second},
		{4 * time.Second, 12 * time.Second},
	} {
		if got := pollPause(c.took); got != c.want {
			t.Errorf("pollPause(%v) = %v, want %v", c.took, got, c.want)
		}
	}
}

// TestReadResultsRoundTrip: the chart command reads back what writeReport wrote, a value
// never reached ("unfinished", "—") as 0, which the chart draws as "did not finish".
func TestReadResultsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BENCH_OUT", dir)
	rs := []result{
		{Services: 1000, Endpoints: 4, Proxy: "ipvs-proxier", ColdStart: 3 * time.Second, Critical: 1200 * time.Millisecond, SetsDone: 4 * time.Second, P50: 900 * time.Millisecond, P99: 1500 * time.Millisecond, Changes: 52, SteadyRSS: 40, PeakRSS: 60, CPUIdle: 0.92},
		{Services: 30000, Endpoints: 4, Proxy: "kube-proxy", ColdStart: 500 * time.Second, PeakRSS: 398, Notes: []string{"a", "b"}},
	}
	if err := writeReport(dir, "m", (&benchkit.Workload{}).Describe(), []int{1000, 30000}, rs); err != nil {
		t.Fatal(err)
	}
	got, err := readResults([]string{dir + "/results.csv"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SetsDone != 4*time.Second || got[0].P50 != 900*time.Millisecond || got[0].CPUIdle != 0.92 ||
		got[1].SetsDone != 0 || got[1].P50 != 0 || got[1].ColdStart != 500*time.Second || len(got[1].Notes) != 2 {
		t.Errorf("read back %+v", got)
	}
	if err := chartCommand([]string{dir + "/c.png", "t", dir + "/results.csv"}); err != nil {
		t.Fatal(err)
	}
}
