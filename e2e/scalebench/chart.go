package main

import (
	"fmt"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// chartDNF labels the "did not finish" cross.
const chartDNF = "did not finish within the step's budget (20-25 min)"

// chart draws, for each proxy, the time to complete sets, change latency (p50), idle CPU
// and steady RSS against the Service count, under title. A value the proxy never reached
// (0: it did not finish) is a cross at the top of its panel; a panel whose values span
// 100× or more is logarithmic.
func chart(path, title string, rs []result) error {
	sets := benchkit.Panel{Title: "Sets complete after start", XLabel: "Services", YLabel: "s"}
	lat := benchkit.Panel{Title: "Change latency (p50)", XLabel: "Services", YLabel: "ms"}
	idle := benchkit.Panel{Title: "CPU when idle", XLabel: "Services", YLabel: "s/min"}
	mem := benchkit.Panel{Title: "Steady RSS", XLabel: "Services", YLabel: "MiB"}
	var names []string
	for _, r := range rs {
		if !contains(names, r.Proxy) {
			names = append(names, r.Proxy)
		}
	}
	for _, name := range names {
		label := chartLabel(name)
		s, l, c, m := benchkit.Series{Name: label}, benchkit.Series{Name: label}, benchkit.Series{Name: label}, benchkit.Series{Name: label}
		for _, r := range rs {
			if r.Proxy != name {
				continue
			}
			x := float64(r.Services)
			point(&s, x, r.SetsDone.Seconds())
			point(&l, x, float64(r.P50)/float64(time.Millisecond))
			point(&c, x, r.CPUIdle)
			point(&m, x, r.SteadyRSS)
		}
		sets.Series, lat.Series = append(sets.Series, s), append(lat.Series, l)
		idle.Series, mem.Series = append(idle.Series, c), append(mem.Series, m)
	}
	return benchkit.Chart(path, title, chartDNF, []benchkit.Panel{sets, lat, idle, mem})
}

// chartLabel names a proxy's series: kube-proxy's IPVS mode by its mode, kube-router with
// its caveat's advisory.
func chartLabel(name string) string {
	switch name {
	case "kube-proxy":
		return "kube-proxy, IPVS mode"
	case "kube-proxy nftables":
		return "kube-proxy, nftables mode"
	case benchkit.KubeRouter.Name:
		return benchkit.KubeRouterLabel
	}
	return name
}

// point adds y at x, or a DNF mark when y is 0 (never reached).
func point(s *benchkit.Series, x, y float64) {
	if y > 0 {
		s.XYs = append(s.XYs, plotter.XY{X: x, Y: y})
	} else {
		s.DNF = append(s.DNF, x)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// chartTitle says what was measured where.
func chartTitle(machine, workload string) string {
	return fmt.Sprintf("%s, one proxy at a time; %s", workload, machine)
}

// chartCommand is `scalebench chart OUT.png TITLE CSV...`: the chart of rows gathered from
// several runs' results.csv, as docs/performance.md shows every proxy.
func chartCommand(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: scalebench chart OUT.png TITLE RESULTS.csv...")
	}
	rs, err := readResults(args[2:])
	if err != nil {
		return err
	}
	return chart(args[0], args[1], rs)
}
