package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// TestGather: a run's rows join the gathered CSV; a row of the same step and proxy
// replaces the older where it stood, a new one comes last, and kube-router's caveat
// leads its notes once however often it is gathered.
func TestGather(t *testing.T) {
	dir := t.TempDir()
	all, run := dir+"/all.csv", dir+"/results.csv"
	// An older run's columns: fewer, and a value it did not measure ("—").
	old := "services,endpoints,proxy,cold_start_s,cpu_idle_s_per_min,virtual_servers,notes\n" +
		"1000,4,ipvs-proxier,5.0,—,1501,\n1000,4,kube-proxy,20.0,1.00,1501,\n30000,4,ipvs-proxier,100.0,2.00,45001,\n"
	if err := os.WriteFile(all, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := []result{
		{Services: 1000, Endpoints: 4, Proxy: "kube-proxy", ColdStart: 18 * time.Second, Critical: time.Second},
		{Services: 1000, Endpoints: 4, Proxy: "kube-router", ColdStart: 30 * time.Second, Notes: []string{"n"}},
	}
	if err := writeCSV(run, fresh); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := gatherCommand([]string{all, run}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := benchkit.ReadCSV([]string{all})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range got {
		order = append(order, r["proxy"])
	}
	if strings.Join(order, ",") != "ipvs-proxier,kube-proxy,ipvs-proxier,kube-router" || got[1]["cold_start_s"] != "18.0" || got[1]["critical_services_s"] != "1.0" ||
		got[0]["virtual_servers"] != "1501" || got[0]["cpu_idle_s_per_min"] != "—" || got[0]["critical_services_s"] != "" || !strings.HasSuffix(got[3]["notes"], "; n") {
		t.Errorf("gathered %v", got)
	}
	text, _ := os.ReadFile(all)
	if n := strings.Count(string(text), benchkit.KubeRouterCaveat); n != 1 {
		t.Errorf("kube-router's caveat %d times in:\n%s", n, text)
	}
	if err := gatherCommand([]string{dir + "/new.csv", run}); err != nil {
		t.Fatalf("gathering into a new file: %v", err)
	}
}
