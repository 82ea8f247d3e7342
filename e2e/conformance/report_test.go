package conformance

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

const junitSample = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5">
  <testsuite name="Kubernetes e2e suite" tests="5">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1"></testcase>
    <testcase name="[It] [sig-network] Services should serve a basic endpoint from pods  [Conformance] [sig-network, Conformance]" status="passed" time="20.5"></testcase>
    <testcase name="[It] [sig-network] Services should be rejected when no endpoints exist" status="failed" time="60">
      <failure message="[FAILED] Timed out after 60s.&#xA;more" type="failed">body</failure>
    </testcase>
    <testcase name="[It] [sig-network] Services should work after restarting kube-proxy [Disruptive]" status="skipped" time="0">
      <skipped message="skipped - Requires at least 2 nodes"></skipped>
    </testcase>
    <testcase name="[It] [sig-network] Conntrack should drop INVALID conntrack entries" status="timedout" time="900"></testcase>
  </testsuite>
</testsuites>`

func TestParseJUnit(t *testing.T) {
	res, err := ParseJUnit([]byte(junitSample))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d results, want the 4 [It] cases: %v", len(res), res)
	}
	for name, want := range map[string]Result{
		"[sig-network] Services should serve a basic endpoint from pods [Conformance]": {Outcome: Pass, Seconds: 20.5},
		"[sig-network] Services should be rejected when no endpoints exist":            {Outcome: Fail, Message: "[FAILED] Timed out after 60s.", Seconds: 60},
		"[sig-network] Services should work after restarting kube-proxy [Disruptive]":  {Outcome: Skip, Message: "skipped - Requires at least 2 nodes"},
		"[sig-network] Conntrack should drop INVALID conntrack entries":                {Outcome: Fail, Message: "timedout", Seconds: 900},
	} {
		if res[name] != want {
			t.Errorf("%s: %+v, want %+v", name, res[name], want)
		}
	}
	if _, err := ParseJUnit([]byte("<testsuites><oops")); err == nil {
		t.Error("a broken report accepted")
	}
}

func TestParseSelection(t *testing.T) {
	sel, err := ParseSelection([]byte(`# comment
focus \[sig-network\] Services
focus \[sig-network\] Conntrack

skip LoadBalancer -- needs a cloud provider
note rejected -- both: why
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sel.FocusRegex(); got != `(\[sig-network\] Services)|(\[sig-network\] Conntrack)` {
		t.Errorf("focus %q", got)
	}
	if got := sel.SkipRegex(); got != `(LoadBalancer)` {
		t.Errorf("skip %q", got)
	}
	for spec, want := range map[string][2]any{
		"[sig-network] Services should work":              {true, ""},
		"[sig-network] Services LoadBalancer should work": {true, "needs a cloud provider"},
		"[sig-storage] Volumes":                           {false, ""},
	} {
		c, reason := sel.Classify(spec)
		if c != want[0] || reason != want[1] {
			t.Errorf("%s: %v %q, want %v", spec, c, reason, want)
		}
	}
	if sel.Note("x should be rejected") != "both: why" {
		t.Error("note not found")
	}
	for _, bad := range []string{"skip LoadBalancer", "skip  -- why", "focus (", "include x", "skip x -- "} {
		if _, err := ParseSelection([]byte("focus a\n" + bad + "\n")); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseSelection([]byte("skip a -- b\n")); err == nil {
		t.Error("a selection without focus accepted")
	}
}

func TestReport(t *testing.T) {
	sel, err := ParseSelection([]byte("focus Services\nskip LoadBalancer -- needs a cloud\ndifference documented -- a row\nnote b -- explained, not excused\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{
		Candidates: []string{"Services a", "Services b", "Services c documented", "Services LoadBalancer d", "Services e"},
		Selection:  sel,
		Runs: map[string]*Run{
			"kube-proxy-ipvs": {Proxy: "kube-proxy-ipvs", Wall: 90 * time.Second, Results: map[string]Result{
				"Services a": {Outcome: Pass}, "Services b": {Outcome: Pass}, "Services c documented": {Outcome: Pass},
				"Services e": {Outcome: Fail, Message: "env"}}},
			"ipvs-proxier": {Proxy: "ipvs-proxier", Wall: 60 * time.Second, Results: map[string]Result{
				"Services a": {Outcome: Pass}, "Services b": {Outcome: Fail, Message: "boom | here"}, "Services c documented": {Outcome: Fail},
			}},
		},
		Cluster:   []string{"two nodes"},
		Reproduce: "`make conformance`",
	}
	if p, f, s := r.Counts("ipvs-proxier"); p != 1 || f != 3 || s != 0 {
		t.Errorf("ours: %d/%d/%d, want 1 pass, 3 fail (e was not reported)", p, f, s)
	}
	if reg := r.Regressions(); len(reg) != 1 || reg[0] != "Services b" {
		t.Errorf("regressions %v, want [Services b] (c meets a difference; b's note excuses nothing)", reg)
	}
	if got := r.Summary(); got != "Upstream Service e2e tests passed (ipvs-proxier: 1 of 4; kube-proxy IPVS: 3 of 4)" {
		t.Errorf("summary %q", got)
	}
	var csvOut, md bytes.Buffer
	if err := r.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	// The proxies not run keep their columns, empty.
	wantCSV := "test,kube-proxy-ipvs,kube-proxy-nftables,kube-router,ipvs-proxier,ipvs-proxier-nftables\n" +
		"Services LoadBalancer d,skip,,,skip,\nServices a,pass,,,pass,\nServices b,pass,,,fail,\n" +
		"Services c documented,pass,,,fail,\nServices e,fail,,,fail,\n"
	if csvOut.String() != wantCSV {
		t.Errorf("csv:\n%s\nwant:\n%s", csvOut.String(), wantCSV)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| pass | 3 | not run | not run | 1 | not run |", "| wall time | 1m30s | | | 1m0s | |",
		"| Services b | pass | | | fail | | explained, not excused |",
		"| Services c documented | pass | | | fail | | Differences: a row |", "| Services LoadBalancer d | needs a cloud |",
		"**1 tests kube-proxy IPVS passes and ipvs-proxier fails**", "| Services e | fail | | | fail | | kube-proxy IPVS: env; ipvs-proxier: not reported by the run |",
		"Not run for this report: kube-proxy nftables, kube-router v2.1.0, ipvs-proxier (nftables) (empty in the CSV)."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// TestReportColumns: every proxy's run is a column in Table's order, in the CSV, the
// counts, the tables and the summary (ours, the reference, then the others run); the
// regressions still compare ipvs-proxier with the reference only; kube-router's tables
// name its version and its advisory.
func TestReportColumns(t *testing.T) {
	sel, err := ParseSelection([]byte("focus Services\n"))
	if err != nil {
		t.Fatal(err)
	}
	pass := map[string]Result{"Services a": {Outcome: Pass}}
	r := &Report{Candidates: []string{"Services a"}, Selection: sel, Runs: map[string]*Run{
		"ipvs-proxier-nftables": {Proxy: "ipvs-proxier-nftables", Wall: time.Minute, Results: map[string]Result{"Services a": {Outcome: Fail, Message: "x"}}},
		"kube-router":           {Proxy: "kube-router", Wall: 2 * time.Minute, Results: pass},
		"ipvs-proxier":          {Proxy: "ipvs-proxier", Results: pass},
		"kube-proxy-nftables":   {Proxy: "kube-proxy-nftables", Wall: 3 * time.Minute, Results: pass},
		"kube-proxy-ipvs":       {Proxy: "kube-proxy-ipvs", Results: pass},
	}}
	var csvOut, md bytes.Buffer
	if err := r.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if want := "test,kube-proxy-ipvs,kube-proxy-nftables,kube-router,ipvs-proxier,ipvs-proxier-nftables\nServices a,pass,pass,pass,pass,fail\n"; csvOut.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", csvOut.String(), want)
	}
	if got, want := r.Summary(), "Upstream Service e2e tests passed (ipvs-proxier: 1 of 1; kube-proxy IPVS: 1 of 1; kube-proxy nftables: 1 of 1; "+
		"kube-router v2.1.0: 1 of 1; ipvs-proxier (nftables): 0 of 1)"; got != want {
		t.Errorf("summary %q\nwant    %q", got, want)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| | kube-proxy IPVS | kube-proxy nftables | kube-router v2.1.0 | ipvs-proxier | ipvs-proxier (nftables) |",
		"| fail | 0 | 0 | 0 | 0 | 1 |", "| wall time | | 3m0s | 2m0s | | 1m0s |",
		"| test | kube-proxy IPVS | kube-proxy nftables | kube-router v2.1.0 | ipvs-proxier | ipvs-proxier (nftables) | note |",
		"| Services a | pass | pass | pass | pass | fail | ipvs-proxier (nftables): x |",
		"## Passed by a peer, failed by ours", "- Services a (passed by kube-proxy nftables, kube-router v2.1.0; failed by ipvs-proxier (nftables))"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if n := strings.Count(md.String(), "kube-router v2.1.0 is the only kube-router version served here; it predates kube-router's externalIPs advisory GHSA-phqm-jgc3-qf8g (fixed in v2.8.0)."); n != 2 {
		t.Errorf("the advisory under %d tables, want both", n)
	}
	if reg := r.Regressions(); len(reg) != 0 {
		t.Errorf("regressions %v", reg)
	}
}

// TestPeerPasses: a test kube-proxy's nftables mode or kube-router passes and one of ours
// fails is listed with who passed and who failed; the reference alone, a documented
// difference, a skip of ours or a peer not run list nothing.
func TestPeerPasses(t *testing.T) {
	sel, err := ParseSelection([]byte("focus Services\ndifference documented -- a row\n"))
	if err != nil {
		t.Fatal(err)
	}
	res := func(kv ...string) map[string]Result {
		m := map[string]Result{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = Result{Outcome: Outcome(kv[i+1])}
		}
		return m
	}
	r := &Report{Candidates: []string{"Services nft", "Services router", "Services both", "Services ref only", "Services documented",
		"Services ours skip", "Services all pass"}, Selection: sel, Runs: map[string]*Run{
		"kube-proxy-ipvs": {Results: res("Services nft", "fail", "Services router", "fail", "Services both", "pass", "Services ref only", "pass",
			"Services documented", "pass", "Services ours skip", "pass", "Services all pass", "pass")},
		"kube-proxy-nftables": {Results: res("Services nft", "pass", "Services router", "fail", "Services both", "pass", "Services ref only", "fail",
			"Services documented", "pass", "Services ours skip", "pass", "Services all pass", "pass")},
		"kube-router": {Results: res("Services nft", "fail", "Services router", "pass", "Services both", "pass", "Services ref only", "fail",
			"Services documented", "pass", "Services ours skip", "pass", "Services all pass", "pass")},
		"ipvs-proxier": {Results: res("Services nft", "fail", "Services router", "pass", "Services both", "fail", "Services ref only", "fail",
			"Services documented", "fail", "Services ours skip", "skip", "Services all pass", "pass")},
		"ipvs-proxier-nftables": {Results: res("Services nft", "pass", "Services router", "fail", "Services both", "fail", "Services ref only", "fail",
			"Services documented", "fail", "Services ours skip", "skip", "Services all pass", "pass")},
	}}
	got := r.PeerPasses()
	want := []PeerPass{
		{Spec: "Services both", PassedBy: []string{"kube-proxy-nftables", "kube-router"}, FailedBy: []string{"ipvs-proxier", "ipvs-proxier-nftables"}},
		{Spec: "Services nft", PassedBy: []string{"kube-proxy-nftables"}, FailedBy: []string{"ipvs-proxier"}},
		{Spec: "Services router", PassedBy: []string{"kube-router"}, FailedBy: []string{"ipvs-proxier-nftables"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("peer passes:\n%+v\nwant\n%+v", got, want)
	}
	// Without the peers' runs there is nothing to list, and no section.
	delete(r.Runs, "kube-proxy-nftables")
	delete(r.Runs, "kube-router")
	if got := r.PeerPasses(); len(got) != 0 {
		t.Errorf("peer passes with no peer run: %+v", got)
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Passed by a peer") {
		t.Errorf("an empty peer section:\n%s", md.String())
	}
}

func TestMDCell(t *testing.T) {
	if got := mdCell("a|b\nc <d>"); got != `a\|b c &lt;d&gt;` {
		t.Errorf("mdCell: %q", got)
	}
}
