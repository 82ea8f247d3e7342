package conformance

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Proxies are the report's columns, in order: the reference first.
var Proxies = []string{"kube-proxy-ipvs", "ipvs-proxier"}

// Optional are proxies run only when asked (-proxies); each is a column after Proxies
// in a report that has its run. ipvs-proxier-nftables is ours with `rulesBackend:
// nftables`.
var Optional = []string{"ipvs-proxier-nftables"}

// ProxyTitle is a proxy's name in the report's prose.
var ProxyTitle = map[string]string{"kube-proxy-ipvs": "kube-proxy IPVS", "ipvs-proxier": "ipvs-proxier",
	"ipvs-proxier-nftables": "ipvs-proxier (nftables)"}

// columns are the report's proxies: Proxies, then each of Optional that was run.
func (r *Report) columns() []string {
	out := append([]string(nil), Proxies...)
	for _, p := range Optional {
		if _, ok := r.Runs[p]; ok {
			out = append(out, p)
		}
	}
	return out
}

// Run is one proxy's run of the selection.
type Run struct {
	Proxy   string
	Results map[string]Result
	Wall    time.Duration
}

// Report is what docs/conformance.md and .csv are written from.
type Report struct {
	Candidates []string // every spec the focus picks (a dry run of e2e.test)
	Selection  *Selection
	Runs       map[string]*Run // by proxy; a proxy not run is absent
	Cluster    []string        // lines describing the cluster and the versions
	Reproduce  string
}

// selected is the candidates that run, sorted.
func (r *Report) selected() (run []string, skipped map[string]string) {
	skipped = map[string]string{}
	for _, c := range r.Candidates {
		if _, reason := r.Selection.Classify(c); reason != "" {
			skipped[c] = reason
		} else {
			run = append(run, c)
		}
	}
	sort.Strings(run)
	return run, skipped
}

// outcome is a selected spec's outcome in a proxy's run: a spec the run did not
// report (the suite stopped early) counts as failed.
func (r *Report) outcome(proxy, spec string) (Result, bool) {
	run, ok := r.Runs[proxy]
	if !ok {
		return Result{}, false
	}
	res, ok := run.Results[spec]
	if !ok {
		return Result{Outcome: Fail, Message: "not reported by the run"}, true
	}
	return res, true
}

// Counts is pass, fail and skip of a proxy over the selection.
func (r *Report) Counts(proxy string) (pass, fail, skip int) {
	sel, _ := r.selected()
	for _, s := range sel {
		res, _ := r.outcome(proxy, s)
		switch res.Outcome {
		case Pass:
			pass++
		case Fail:
			fail++
		default:
			skip++
		}
	}
	return
}

// Regressions are the specs kube-proxy IPVS passes and ipvs-proxier does not, less
// those that meet a documented difference.
func (r *Report) Regressions() []string {
	sel, _ := r.selected()
	var out []string
	for _, s := range sel {
		ref, ok1 := r.outcome(Proxies[0], s)
		ours, ok2 := r.outcome(Proxies[1], s)
		if ok1 && ok2 && ref.Outcome == Pass && ours.Outcome != Pass && r.Selection.Difference(s) == "" {
			out = append(out, s)
		}
	}
	return out
}

// WriteCSV writes one row per candidate spec: test,kube-proxy-ipvs,ipvs-proxier, then
// a column per optional proxy run (a spec the selection skips, or a proxy not run, is
// skip).
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cols := r.columns()
	if err := cw.Write(append([]string{"test"}, cols...)); err != nil {
		return err
	}
	specs := append([]string(nil), r.Candidates...)
	sort.Strings(specs)
	_, skipped := r.selected()
	for _, s := range specs {
		row := []string{s}
		for _, p := range cols {
			v := Skip
			if _, sk := skipped[s]; !sk {
				if res, ok := r.outcome(p, s); ok {
					v = res.Outcome
				}
			}
			row = append(row, string(v))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Summary is README's one line.
func (r *Report) Summary() string {
	sel, _ := r.selected()
	parts := []string{}
	cols := r.columns()
	// Ours first, then the reference, then the optional runs: README's order.
	order := append([]string{Proxies[1], Proxies[0]}, cols[len(Proxies):]...)
	for _, p := range order {
		if _, ok := r.Runs[p]; !ok {
			parts = append(parts, ProxyTitle[p]+": not run")
			continue
		}
		pass, _, _ := r.Counts(p)
		parts = append(parts, fmt.Sprintf("%s: %d of %d", ProxyTitle[p], pass, len(sel)))
	}
	return fmt.Sprintf("Upstream Service e2e tests passed (%s)", strings.Join(parts, "; "))
}

// WriteMarkdown writes docs/conformance.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	sel, skipped := r.selected()
	var b strings.Builder
	b.WriteString("# The upstream Kubernetes Service e2e suite\n\n")
	b.WriteString("Kubernetes' own Service tests (`test/e2e/network` of the pinned `k8s.io/kubernetes` module), run by " +
		"`make conformance` against a real two-node cluster, once with ipvs-proxier as its only service proxy and once " +
		"with stock kube-proxy in IPVS mode, on the same cluster. One row per test: [conformance.csv](conformance.csv).\n\n")
	b.WriteString(r.Summary() + ".\n\n")
	cols := r.columns()
	for _, p := range Proxies {
		if _, ok := r.Runs[p]; !ok {
			b.WriteString("Not run for this report: " + ProxyTitle[p] + " (its CSV column reads skip).\n\n")
		}
	}
	b.WriteString("## The cluster\n\n")
	for _, l := range r.Cluster {
		b.WriteString("- " + l + "\n")
	}
	fmt.Fprintf(&b, "\n## Results\n\n%d tests selected of %d that the focus picks (%d skipped, each with its reason below).\n\n", len(sel), len(r.Candidates), len(skipped))
	b.WriteString("| | " + titles(cols, " | ") + " |\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, row := range []struct {
		name string
		pick func(p, f, s int) int
	}{{"pass", func(p, _, _ int) int { return p }}, {"fail", func(_, f, _ int) int { return f }}, {"skip (by the test itself)", func(_, _, s int) int { return s }}} {
		b.WriteString("| " + row.name + " |")
		for _, p := range cols {
			if _, ok := r.Runs[p]; !ok {
				b.WriteString(" not run |")
				continue
			}
			fmt.Fprintf(&b, " %d |", row.pick(r.Counts(p)))
		}
		b.WriteString("\n")
	}
	b.WriteString("| wall time |")
	for _, p := range cols {
		if run, ok := r.Runs[p]; ok {
			fmt.Fprintf(&b, " %s |", run.Wall.Round(time.Second))
		} else {
			b.WriteString(" |")
		}
	}
	b.WriteString("\n\n")
	if reg := r.Regressions(); len(reg) > 0 {
		fmt.Fprintf(&b, "**%d tests kube-proxy IPVS passes and ipvs-proxier fails** (no documented difference):\n\n", len(reg))
		for _, s := range reg {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("## Each test\n\n| test | " + titles(cols, " | ") + " | note |\n|---|" + strings.Repeat("---|", len(cols)) + "---|\n")
	for _, s := range sel {
		b.WriteString("| " + mdCell(s) + " |")
		var msgs []string
		for _, p := range cols {
			res, ok := r.outcome(p, s)
			if !ok {
				b.WriteString(" not run |")
				continue
			}
			b.WriteString(" " + string(res.Outcome) + " |")
			if res.Outcome != Pass && res.Message != "" {
				msgs = append(msgs, ProxyTitle[p]+": "+res.Message)
			}
		}
		note := r.Selection.Note(s)
		if d := r.Selection.Difference(s); d != "" {
			note = "Differences: " + d
		}
		if note == "" {
			note = strings.Join(msgs, "; ")
		}
		b.WriteString(" " + mdCell(note) + " |\n")
	}
	if len(skipped) > 0 {
		b.WriteString("\n## Not selected\n\n| test | why |\n|---|---|\n")
		names := make([]string, 0, len(skipped))
		for s := range skipped {
			names = append(names, s)
		}
		sort.Strings(names)
		for _, s := range names {
			b.WriteString("| " + mdCell(s) + " | " + mdCell(skipped[s]) + " |\n")
		}
	}
	b.WriteString("\n## Reproduce\n\n" + r.Reproduce + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func titles(cols []string, sep string) string {
	t := make([]string, len(cols))
	for i, p := range cols {
		t[i] = ProxyTitle[p]
	}
	return strings.Join(t, sep)
}

// mdCell makes text safe in a table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
