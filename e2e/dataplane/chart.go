package main

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// chart draws short-connection requests per second and connect p99 against the number
// of Services, one line per proxy through the medians of its runs; a proxy with rows at a
// size but no measured run there (not ready within the budget) gets a "did not finish"
// cross at that size.
func chart(path, title string, rs []result) error {
	rps := benchkit.Panel{Title: "Short-connection requests per second", XLabel: "Services", YLabel: "req/s"}
	p99 := benchkit.Panel{Title: "Connect p99", XLabel: "Services", YLabel: "ms"}
	var names []string
	for _, r := range rs {
		if !slices.Contains(names, r.Proxy) {
			names = append(names, r.Proxy)
		}
	}
	for _, name := range names {
		label := display(name)
		if name == benchkit.KubeRouter.Name {
			label = benchkit.KubeRouterLabel
		}
		a, c := benchkit.Series{Name: label}, benchkit.Series{Name: label}
		for _, n := range sizesOf(rs) {
			if m := measured(rs, name, n); m != nil {
				a.XYs = append(a.XYs, plotter.XY{X: float64(n), Y: m.Short.RPS})
				c.XYs = append(c.XYs, plotter.XY{X: float64(n), Y: m.Short.Connect.P99})
			} else if runsOf(rs, name, n) > 0 {
				a.DNF, c.DNF = append(a.DNF, float64(n)), append(c.DNF, float64(n))
			}
		}
		rps.Series, p99.Series = append(rps.Series, a), append(p99.Series, c)
	}
	return benchkit.Chart(path, title, "not ready within the budget (10-50 min)", []benchkit.Panel{rps, p99})
}

// readCSV reads the rows of dataplane.csv files (writeCSV's columns) that the chart uses.
func readCSV(paths []string) ([]result, error) {
	rows, err := benchkit.ReadCSV(paths)
	if err != nil {
		return nil, err
	}
	out := make([]result, 0, len(rows))
	for _, row := range rows {
		r := result{Services: int(benchkit.Num(row["services"])), Proxy: row["proxy"], Run: int(benchkit.Num(row["run"]))}
		r.Short.RPS, r.Short.Connect.P99 = benchkit.Num(row["short_rps"]), benchkit.Num(row["connect_p99_ms"])
		r.KeepAlive.RPS = benchkit.Num(row["keepalive_rps"])
		out = append(out, r)
	}
	return out, nil
}

// chartCommand is `dataplane chart OUT.png TITLE CSV...`: the chart of rows gathered from
// several runs' dataplane.csv.
func chartCommand(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: dataplane chart OUT.png TITLE DATAPLANE.csv...")
	}
	rs, err := readCSV(args[2:])
	if err != nil {
		return err
	}
	return chart(args[0], args[1], rs)
}
