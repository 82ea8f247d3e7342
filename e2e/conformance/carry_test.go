package conformance

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// TestCarryOver: a report of kube-router alone, written over docs whose CSV predates the
// new columns, keeps the reference's and ours' columns (values and wall times), adds
// kube-router's in Table's order, leaves kube-proxy nftables empty, and counts the
// carried outcomes; a spec the previous CSV lacks is empty, not failed.
func TestCarryOver(t *testing.T) {
	sel, err := ParseSelection([]byte("focus Services\nskip LoadBalancer -- needs a cloud\n"))
	if err != nil {
		t.Fatal(err)
	}
	prevCSV := "test,kube-proxy-ipvs,ipvs-proxier,ipvs-proxier-nftables\n" +
		"Services LoadBalancer d,skip,skip,skip\nServices a,pass,pass,pass\nServices b,pass,fail,pass\n"
	prevMD := "## Results\n\n| | kube-proxy IPVS | ipvs-proxier | ipvs-proxier (nftables) |\n|---|---|---|---|\n" +
		"| pass | 2 | 1 | 2 |\n| wall time | 1h1m50s | 42m36s | 42m57s |\n"
	r := &Report{Candidates: []string{"Services a", "Services b", "Services new", "Services LoadBalancer d"}, Selection: sel,
		Runs: map[string]*Run{"kube-router": {Proxy: "kube-router", Wall: time.Hour, Results: map[string]Result{
			"Services a": {Outcome: Pass}, "Services b": {Outcome: Pass}, "Services new": {Outcome: Fail, Message: "m"}}}}}
	carried, err := r.CarryOver([]byte(prevCSV), []byte(prevMD))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kube-proxy-ipvs", "ipvs-proxier", "ipvs-proxier-nftables"}; !reflect.DeepEqual(carried, want) {
		t.Errorf("carried %v, want %v", carried, want)
	}
	if r.Runs["kube-router"].Carried {
		t.Error("the run's own column replaced by the previous CSV")
	}
	var out bytes.Buffer
	if err := r.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	want := "test,kube-proxy-ipvs,kube-proxy-nftables,kube-router,ipvs-proxier,ipvs-proxier-nftables\n" +
		"Services LoadBalancer d,skip,,skip,skip,skip\nServices a,pass,,pass,pass,pass\nServices b,pass,,pass,fail,pass\n" +
		"Services new,,,fail,,\n"
	if out.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", out.String(), want)
	}
	if w := r.Runs["kube-proxy-ipvs"].Wall; w != time.Hour+time.Minute+50*time.Second {
		t.Errorf("reference's wall %v, want the previous report's", w)
	}
	if p, f, s := r.Counts("ipvs-proxier"); p != 1 || f != 1 || s != 0 {
		t.Errorf("ours carried: %d/%d/%d, want 1 pass, 1 fail, the new spec not counted", p, f, s)
	}
	if reg := r.Regressions(); !reflect.DeepEqual(reg, []string{"Services b"}) {
		t.Errorf("regressions over carried columns %v", reg)
	}
	// What this report wrote carries over again unchanged: a second run of one proxy
	// loses nothing.
	r2 := &Report{Candidates: r.Candidates, Selection: sel, Runs: map[string]*Run{}}
	if _, err := r2.CarryOver(out.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := r2.WriteCSV(&again); err != nil {
		t.Fatal(err)
	}
	if again.String() != want {
		t.Errorf("carried twice:\n%s\nwant:\n%s", again.String(), want)
	}
	for _, bad := range []string{"", "name,ipvs-proxier\n", "test,ipvs-proxier\nServices a,maybe\n"} {
		if _, err := (&Report{Runs: map[string]*Run{}}).CarryOver([]byte(bad), nil); err == nil {
			t.Errorf("previous CSV %q accepted", bad)
		}
	}
}
