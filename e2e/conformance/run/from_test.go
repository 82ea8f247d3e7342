package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
)

func junit(cases string) string {
	return `<testsuites><testsuite time="30">` + cases + `</testsuite></testsuites>`
}

func TestFromReports(t *testing.T) {
	run1, run2 := t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(run1, "dry-run.xml"): junit(`<testcase name="[It] Services a" status="passed"/><testcase name="[It] Services b [Serial]" status="passed"/>` +
			`<testcase name="[It] Other c" status="skipped"/>`),
		// The parallel part skips the serial spec, the serial part the parallel one.
		filepath.Join(run1, "ipvs-proxier", "junit-1-parallel.xml"):    junit(`<testcase name="[It] Services a" status="passed"/><testcase name="[It] Services b [Serial]" status="skipped"/>`),
		filepath.Join(run1, "ipvs-proxier", "junit-2-serial.xml"):      junit(`<testcase name="[It] Services a" status="skipped"/><testcase name="[It] Services b [Serial]" status="failed"/>`),
		filepath.Join(run1, "ipvs-proxier", "wall.txt"):                "1h2m3s\n",
		filepath.Join(run2, "kube-proxy-ipvs", "junit-1-parallel.xml"): junit(`<testcase name="[It] Services a" status="passed"/>`),
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sel, err := conformance.ParseSelection([]byte("focus Services\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := fromReports([]string{run1, run2}, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Candidates) != 2 {
		t.Errorf("candidates %v", r.Candidates)
	}
	ours := r.Runs["ipvs-proxier"]
	if ours.Results["Services a"].Outcome != conformance.Pass || ours.Results["Services b [Serial]"].Outcome != conformance.Fail {
		t.Errorf("ours merged: %+v", ours.Results)
	}
	if ours.Wall != time.Hour+2*time.Minute+3*time.Second {
		t.Errorf("wall %v, want wall.txt's", ours.Wall)
	}
	if kp := r.Runs["kube-proxy-ipvs"]; kp == nil || kp.Wall != 30*time.Second {
		t.Errorf("kube-proxy from the second folder, its suite time as wall: %+v", kp)
	}
	// A later focused run over the first: its result replaces the failure, its time adds.
	rerun := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rerun, "ipvs-proxier"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rerun, "ipvs-proxier", "junit-1-parallel.xml"),
		[]byte(junit(`<testcase name="[It] Services b [Serial]" status="passed"/>`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err = fromReports([]string{run1, run2, rerun}, sel); err != nil {
		t.Fatal(err)
	}
	ours = r.Runs["ipvs-proxier"]
	if ours.Results["Services b [Serial]"].Outcome != conformance.Pass || ours.Results["Services a"].Outcome != conformance.Pass ||
		ours.Wall != time.Hour+2*time.Minute+33*time.Second {
		t.Errorf("with the rerun: %+v, wall %v", ours.Results, ours.Wall)
	}
	if _, err := fromReports([]string{t.TempDir()}, sel); err == nil {
		t.Error("a folder with no reports accepted")
	}
}

func TestNarrowed(t *testing.T) {
	candidates := []string{"[sig-network] Networking Granular Checks: Services should function for pod-Service: http",
		"[sig-network] Services should serve a basic endpoint from pods [Conformance]"}
	got, err := narrowed(candidates, "Granular Checks: Services")
	if err != nil {
		t.Fatal(err)
	}
	if want := `\[sig-network\] Networking Granular Checks: Services should function for pod-Service: http`; got != want {
		t.Errorf("narrowed %q, want %q", got, want)
	}
	if _, err := narrowed(candidates, "nothing like it"); err == nil {
		t.Error("a focus that matches nothing accepted")
	}
}

// TestWriteDocsKeepsColumns: docs written from a run of one proxy keep the columns the
// previous conformance.csv in that folder held, in the report's order.
func TestWriteDocsKeepsColumns(t *testing.T) {
	dir := t.TempDir()
	prev := "test,kube-proxy-ipvs,ipvs-proxier,ipvs-proxier-nftables\nServices a,pass,fail,pass\n"
	if err := os.WriteFile(filepath.Join(dir, "conformance.csv"), []byte(prev), 0o644); err != nil {
		t.Fatal(err)
	}
	sel, err := conformance.ParseSelection([]byte("focus Services\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := &conformance.Report{Candidates: []string{"Services a"}, Selection: sel, Runs: map[string]*conformance.Run{
		"kube-proxy-nftables": {Proxy: "kube-proxy-nftables", Results: map[string]conformance.Result{"Services a": {Outcome: conformance.Pass}}}}}
	if err := writeDocs(r, dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "conformance.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "test,kube-proxy-ipvs,kube-proxy-nftables,kube-router,ipvs-proxier,ipvs-proxier-nftables\nServices a,pass,pass,,fail,pass\n"; string(got) != want {
		t.Errorf("csv:\n%s\nwant:\n%s", got, want)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "conformance.md"))
	if !strings.Contains(string(md), "- Services a (passed by kube-proxy nftables; failed by ipvs-proxier)") {
		t.Errorf("the peer's pass against ours carried:\n%s", md)
	}
}

// TestWriteDocsShapes: each shape's docs go to their own files, and every page's shapes
// table has each shape's counts, a shape's row from its own run.
func TestWriteDocsShapes(t *testing.T) {
	dir := t.TempDir()
	sel, err := conformance.ParseSelection([]byte("focus Services\nskip[ipv4] Services dual -- no IPv6 here\n"))
	if err != nil {
		t.Fatal(err)
	}
	report := func(shape string, results map[string]conformance.Outcome) *conformance.Report {
		run := &conformance.Run{Proxy: "ipvs-proxier", Results: map[string]conformance.Result{}}
		for spec, o := range results {
			run.Results[spec] = conformance.Result{Outcome: o}
		}
		return &conformance.Report{Candidates: []string{"Services a", "Services dual"}, Selection: sel.ForShape(shape), Shape: shape,
			Runs: map[string]*conformance.Run{"ipvs-proxier": run}}
	}
	if err := writeDocs(report("ipv4", map[string]conformance.Outcome{"Services a": conformance.Pass}), dir); err != nil {
		t.Fatal(err)
	}
	if err := writeDocs(report("dual-stack", map[string]conformance.Outcome{"Services a": conformance.Pass, "Services dual": conformance.Fail}), dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"conformance.md", "conformance-dual-stack.md"} {
		md, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range []string{"| [ipv4](conformance.md) | 1 | — | — | — | 1 | — |", "| [dual-stack](conformance-dual-stack.md) | 2 | — | — | — | 1 | — |", "| three-zones | not run yet |"} {
			if !strings.Contains(string(md), row) {
				t.Errorf("%s lacks the row %q:\n%s", f, row, md)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "conformance-dual-stack.csv")); err != nil {
		t.Error(err)
	}
}
