package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// The files a soak writes into its output folder.
const (
	csvFile    = "samples.csv"
	chartFile  = "soak.png"
	reportFile = "results.md"
)

// writeResults writes the CSV, the chart and the results page; it returns the verdicts.
func writeResults(dir string, o outcome) ([]verdict, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeCSV(filepath.Join(dir, csvFile), o.Samples); err != nil {
		return nil, err
	}
	if err := drawChart(filepath.Join(dir, chartFile), o); err != nil {
		return nil, err
	}
	vs := verdicts(o)
	return vs, os.WriteFile(filepath.Join(dir, reportFile), []byte(page(o, vs)), 0o644)
}

// drawChart draws the samples over time, one panel a concern, each fault a cross at
// the top of every panel at its minute.
func drawChart(path string, o outcome) error {
	series := func(name string, col func(sample) float64) benchkit.Series {
		s := benchkit.Series{Name: name}
		for _, smp := range o.Samples {
			if v := col(smp); !math.IsNaN(v) {
				s.XYs = append(s.XYs, plotter.XY{X: smp.Minute, Y: v})
			}
		}
		return s
	}
	// One series of crosses for every fault (the page's table names each): benchkit's
	// styles repeat after seven series, and the chart holds six besides.
	faults := benchkit.Series{Name: "fault injected"}
	for _, r := range o.Faults {
		if m := math.Round(r.At.Minutes()*10) / 10; !slices.Contains(faults.DNF, m) {
			faults.DNF = append(faults.DNF, m)
		}
	}
	panel := func(title, y string, ss ...benchkit.Series) benchkit.Panel {
		if len(faults.DNF) > 0 {
			ss = append(ss, faults)
		}
		return benchkit.Panel{Title: title, XLabel: "minutes", YLabel: y, Series: ss}
	}
	panels := []benchkit.Panel{
		panel("Daemon resident memory", "MiB", series("RSS", func(s sample) float64 { return s.RSSMiB })),
		panel("Goroutines and open file descriptors", "count",
			series("goroutines", func(s sample) float64 { return s.Goroutines }),
			series("open fds", func(s sample) float64 { return s.OpenFDs })),
		panel("Sync p99 (each minute) and one change's latency", "ms",
			series("sync p99", func(s sample) float64 { return s.SyncP99Ms }),
			series("probe change to kernel", func(s sample) float64 { return s.ProbeMs })),
		panel("Changes written per minute", "changes", series("churn writes", func(s sample) float64 { return s.Changes })),
	}
	title := fmt.Sprintf("ipvs-proxier soak: %v, %d Services x %d endpoints, %.0f changes a minute, faults: %d", o.Set.Duration, o.Set.Services,
		o.Set.Endpoints, float64(o.Applied)/o.Set.Duration.Minutes(), len(o.Faults))
	return benchkit.Chart(path, title, "a fault's minute (at the top of each panel)", panels)
}

// page is the results page: parameters, verdicts, then the detail behind each.
func page(o outcome, vs []verdict) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	passed := 0
	for _, v := range vs {
		if v.Pass {
			passed++
		}
	}
	w("# ipvs-proxier soak\n\n%d of %d verdicts pass. ![chart](%s) The samples: [%s](%s).\n\n", passed, len(vs), chartFile, csvFile, csvFile)
	w("## Parameters\n\n| | |\n|---|---|\n")
	w("| Duration | %v (%s to %s UTC) |\n", o.Set.Duration, o.Started.UTC().Format("2006-01-02 15:04"), o.Finished.UTC().Format("15:04"))
	w("| Services | %d churned x %d endpoints (namespace %s), and %d untouched ones carrying the traffic |\n", o.Set.Services, o.Set.Endpoints, benchkit.Namespace, len(fixedNames))
	w("| Churn | %.0f changes a minute written (%d asked; a write waits for the one before), seed %d: %s |\n",
		float64(o.Applied)/o.Set.Duration.Minutes(), o.Set.ChurnPerMinute, o.Set.Seed, kindCounts(o.Kinds))
	w("| Faults | a round of every kind each %v from %v, random ones %v apart on average; SIGKILL only until %v before the growth window |\n", o.Set.FaultEvery, o.Set.FaultFrom, o.Set.FaultRandomMean, o.Set.restartWarmUp())
	w("| Growth window | the last %.0f %% of the run, less the samples taken in a fault's window |\n", o.Set.GrowthWindow*100)
	w("| Machine | %s |\n", o.Machine)
	w("| Node | the daemon as deploy/'s DaemonSet runs it (iptables rules backend; profiling on, for the goroutine profiles), its kernel state compared with `ipvs-proxier plan` at the end |\n")
	w("| Reproduce | `SOAK_DURATION=%v SOAK_SERVICES=%d SOAK_SEED=%d make soak` |\n\n", o.Set.Duration, o.Set.Services, o.Set.Seed)
	w("## Verdicts\n\n| Verdict | | Detail |\n|---|---|---|\n")
	for _, v := range vs {
		w("| %s | %s | %s |\n", v.Name, map[bool]string{true: "pass", false: "**FAIL**"}[v.Pass], strings.ReplaceAll(v.Detail, "|", "\\|"))
	}
	w("\nGrowth: a least-squares line through the samples of the growth window (of the last daemon process); it passes under the larger of twice the slope's standard error and %.0f %% of the level an hour, a rate that would double the daemon's memory within a day.", growthShare*100)
	if o.Set.Duration-o.Set.windowStart() < shortWindow {
		w(" A window under %v is too short for a slope an hour of the RSS, which climbs for tens of minutes after a restart: the heap in use is judged in its place, passing when it grew by at most half its level over the window (the collector's widest headroom).", shortWindow)
	}
	w("\n")
	w("\n## Traffic\n\nOne request after another (%v apart), each a new connection (or datagram) through the agent in the node.\n\n", requestGap)
	w("| Flow | From | Target | Sent | Failed | Failures by window |\n|---|---|---|---|---|---|\n")
	for _, l := range o.Loops {
		var win []string
		for k, n := range l.ByWindow {
			win = append(win, fmt.Sprintf("%s: %d", windowName(k), n))
		}
		slices.Sort(win)
		w("| %s (%s) | %s | %s | %d | %d | %s |\n", l.Name, l.Proto, l.From, l.Target, l.OK+l.Failed, l.Failed, strings.Join(win, ", "))
	}
	w("\n## Faults\n\n| Minute | Fault | Recovery | Bound | Detail |\n|---|---|---|---|---|\n")
	for _, r := range o.Faults {
		rec := "not within the bound"
		if r.Recovery >= 0 {
			rec = r.Recovery.Round(100 * time.Millisecond).String()
		}
		kind := r.Kind
		if r.Random {
			kind += " (random)"
		}
		w("| %.1f | %s | %s | %v | %s |\n", r.At.Minutes(), kind, rec, r.Bound, strings.ReplaceAll(strings.TrimSpace(r.Detail+" "+r.Err), "|", "\\|"))
	}
	if c := o.Compare; len(c.OnlyPlan)+len(c.OnlyNode) > 0 {
		w("\n## Kernel and cluster differ\n\nOnly in plan:\n```\n%s\n```\nOnly in the node:\n```\n%s\n```\n", head(c.OnlyPlan, 40), head(c.OnlyNode, 40))
	}
	w("\nChurn writes the apiserver did not take (most while it was down): %d of %d.\n", o.Refused, o.Refused+o.Applied)
	return b.String()
}

// kindCounts is the churn's changes by kind, most first.
func kindCounts(kinds map[string]int) string {
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		if kinds[a] != kinds[b] {
			return kinds[b] - kinds[a]
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, k := range ks {
		out = append(out, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	return strings.Join(out, ", ")
}

// head is the first n lines, and how many more there are.
func head(lines []string, n int) string {
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... and %d more", len(lines)-n)
}
