package conformance

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// columns are the report's proxies: every one in Table, run or not (a proxy not run
// keeps its column, empty, or what the previous CSV held: CarryOver).
func (r *Report) columns() []string { return Columns() }

// Run is one proxy's run of the selection.
type Run struct {
	Proxy   string
	Results map[string]Result
	Wall    time.Duration // zero when unknown (a carried run without its report)
	// Carried: the outcomes are the previous conformance.csv's (CarryOver), not this
	// run's; a spec it lacks is not run rather than failed, and there are no messages.
	Carried bool
}

// Report is what docs/conformance.md and .csv are written from.
type Report struct {
	Candidates []string // every spec the focus picks (a dry run of e2e.test)
	Selection  *Selection
	Runs       map[string]*Run // by proxy; a proxy not run is absent
	Shape      string          // the cluster shape the runs were on
	// ShapesTable is the "Cluster shapes" block (ShapesTable), every shape's counts.
	ShapesTable string
	Cluster     []string // lines describing the cluster and the versions
	Reproduce   string
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
	if !ok && run.Carried {
		return Result{}, false
	}
	if !ok {
		return Result{Outcome: Fail, Message: "not reported by the run"}, true
	}
	return res, true
}

// Counts is pass, fail and skip of a proxy over the selection.
func (r *Report) Counts(proxy string) (pass, fail, skip int) {
	sel, _ := r.selected()
	for _, s := range sel {
		res, ok := r.outcome(proxy, s)
		if !ok {
			continue
		}
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
		ref, ok1 := r.outcome(Reference, s)
		ours, ok2 := r.outcome(Main, s)
		if ok1 && ok2 && ref.Outcome == Pass && ours.Outcome != Pass && r.Selection.Difference(s) == "" {
			out = append(out, s)
		}
	}
	return out
}

// A PeerPass is a spec a peer (kube-proxy's nftables mode, kube-router) passes and one
// of ours fails: a bug of ours, whatever the reference did.
type PeerPass struct {
	Spec     string
	PassedBy []string // peers, by name
	FailedBy []string // ours, by name
}

// PeerPasses are the selected specs a peer passes and one of ours fails, less those
// that meet a documented difference.
func (r *Report) PeerPasses() []PeerPass {
	sel, _ := r.selected()
	var out []PeerPass
	for _, s := range sel {
		if r.Selection.Difference(s) != "" {
			continue
		}
		var pp PeerPass
		for _, p := range Table {
			res, ok := r.outcome(p.Name, s)
			switch {
			case !ok:
			case !p.Ours && p.Name != Reference && res.Outcome == Pass:
				pp.PassedBy = append(pp.PassedBy, p.Name)
			case p.Ours && res.Outcome == Fail:
				pp.FailedBy = append(pp.FailedBy, p.Name)
			}
		}
		if len(pp.PassedBy) > 0 && len(pp.FailedBy) > 0 {
			pp.Spec = s
			out = append(out, pp)
		}
	}
	return out
}

// WriteCSV writes one row per candidate spec and a column per proxy in Table's order
// (test,kube-proxy-ipvs,kube-proxy-nftables,kube-router,ipvs-proxier,ipvs-proxier-nftables):
// pass, fail or skip (a spec the selection skips is skip for every proxy run); a proxy
// not run has an empty cell.
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
			var v Outcome
			run, ran := r.Runs[p]
			_, sk := skipped[s]
			switch {
			case !ran:
			case run.Carried && run.Results[s].Outcome == "": // not in the previous CSV
			case sk:
				v = Skip
			default:
				res, _ := r.outcome(p, s)
				v = res.Outcome
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
	// Ours first, then the reference, then the others run: README's order.
	order := []string{Main, Reference}
	for _, p := range r.columns() {
		if _, ok := r.Runs[p]; ok && p != Main && p != Reference {
			order = append(order, p)
		}
	}
	for _, p := range order {
		if _, ok := r.Runs[p]; !ok {
			parts = append(parts, title(p)+": not run")
			continue
		}
		pass, _, _ := r.Counts(p)
		parts = append(parts, fmt.Sprintf("%s: %d of %d", title(p), pass, len(sel)))
	}
	return fmt.Sprintf("Upstream Service e2e tests passed (%s)", strings.Join(parts, "; "))
}

// WriteMarkdown writes docs/conformance.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	sel, skipped := r.selected()
	var b strings.Builder
	shape := r.Shape
	if shape == "" {
		shape = "ipv4"
	}
	b.WriteString("# The upstream Kubernetes Service e2e suite: the " + shape + " cluster\n\n")
	b.WriteString("Kubernetes' own Service tests (`test/e2e/network` of the pinned `k8s.io/kubernetes` module), run by " +
		"`make conformance` against a real cluster of one shape (this page: `" + shape + "`, below), once per service proxy on the same cluster: ipvs-proxier as its " +
		"only service proxy, stock kube-proxy in IPVS mode (the reference), and on request kube-proxy in nftables mode, " +
		"kube-router's service proxy and ipvs-proxier with its nftables rules backend. One row per test: [" + DocsName(r.Shape) + ".csv](" + DocsName(r.Shape) + ".csv).\n\n")
	b.WriteString(r.Summary() + ".\n\n")
	cols := r.columns()
	var notRun, carried []string
	for _, p := range cols {
		if run, ok := r.Runs[p]; !ok {
			notRun = append(notRun, title(p))
		} else if run.Carried {
			carried = append(carried, title(p))
		}
	}
	if len(notRun) > 0 {
		b.WriteString("Not run for this report: " + strings.Join(notRun, ", ") + " (empty in the CSV).\n\n")
	}
	if len(carried) > 0 {
		b.WriteString("Carried from the previous " + DocsName(r.Shape) + ".csv, not run again: " + strings.Join(carried, ", ") +
			" (outcomes and wall time only; their failure messages are in that report's history).\n\n")
	}
	if r.ShapesTable != "" {
		b.WriteString("## Cluster shapes\n\nTests passed per proxy on each shape (`CONFORMANCE_SHAPE`), of the tests selected there; each shape's page has its own tables.\n\n" + r.ShapesTable + "\n\n")
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
		if run, ok := r.Runs[p]; ok && run.Wall > 0 {
			fmt.Fprintf(&b, " %s |", run.Wall.Round(time.Second))
		} else {
			b.WriteString(" |")
		}
	}
	b.WriteString("\n\n" + KubeRouterAdvisory + "\n\n")
	if reg := r.Regressions(); len(reg) > 0 {
		fmt.Fprintf(&b, "**%d tests kube-proxy IPVS passes and ipvs-proxier fails** (no documented difference):\n\n", len(reg))
		for _, s := range reg {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	}
	if pp := r.PeerPasses(); len(pp) > 0 {
		fmt.Fprintf(&b, "## Passed by a peer, failed by ours\n\n%d tests kube-proxy nftables or kube-router passes and ipvs-proxier (either backend) fails "+
			"(no documented difference); each is a bug of ours:\n\n", len(pp))
		for _, p := range pp {
			b.WriteString("- " + p.Spec + " (passed by " + titles(p.PassedBy, ", ") + "; failed by " + titles(p.FailedBy, ", ") + ")\n")
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
				b.WriteString(" |")
				continue
			}
			b.WriteString(" " + string(res.Outcome) + " |")
			if res.Outcome != Pass && res.Message != "" {
				msgs = append(msgs, title(p)+": "+res.Message)
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
	b.WriteString("\n" + KubeRouterAdvisory + "\n")
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
		t[i] = title(p)
	}
	return strings.Join(t, sep)
}

// mdCell makes text safe in a table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
