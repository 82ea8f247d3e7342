package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

func ms(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64)
}

// critical is the critical-Services time in seconds, or "—" for a proxy that does not
// report it.
func critical(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
}

func secs(d time.Duration) string {
	if d == 0 {
		return "unfinished"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
}

// coldCell is the cold start's table cell: the seconds, or how far the proxy got when
// the budget ran out.
func (r result) coldCell() string {
	if r.ColdStart == 0 {
		return fmt.Sprintf("unfinished: %d of %d ClusterIP ports programmed", r.ClusterPorts, r.Services)
	}
	return secs(r.ColdStart)
}

// probeCell is "answered / probed", or "—" when no probe ran.
func (r result) probeCell() string {
	if r.Probed == 0 {
		return "—"
	}
	return fmt.Sprintf("%d / %d", r.Answered, r.Probed)
}

func (r result) summary() string {
	return fmt.Sprintf("cold start %s (sets %s s, probe answered %s), change p50 %s ms p99 %s ms (%d changes), RSS %.0f MiB (peak %.0f), CPU idle %.2f s/min churn %.2f s/min, %d VS %d RS %d set entries",
		r.coldCell(), secs(r.SetsDone), r.probeCell(), ms(r.P50), ms(r.P99), r.Changes, r.SteadyRSS, r.PeakRSS, r.CPUIdle, r.CPUChurn, r.VS, r.RS, r.SetEntries)
}

// csvColumns are results.csv's columns.
var csvColumns = []string{"services", "endpoints", "proxy", "cold_start_s", "sets_complete_s", "change_p50_ms", "change_p99_ms", "changes",
	"rss_peak_mib", "rss_steady_mib", "cpu_idle_s_per_min", "cpu_churn_s_per_min", "virtual_servers", "real_servers", "ipset_entries", "critical_services_s",
	"cluster_ports_programmed", "probe_sent", "probe_answered", "notes"}

// writeCSV writes the rows as results.csv's columns (readResults reads them back).
func writeCSV(path string, rs []result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(csvColumns)
	for _, r := range rs {
		_ = w.Write([]string{strconv.Itoa(r.Services), strconv.Itoa(r.Endpoints), r.Proxy, secs(r.ColdStart), secs(r.SetsDone), ms(r.P50), ms(r.P99),
			strconv.Itoa(r.Changes), fmt.Sprintf("%.0f", r.PeakRSS), fmt.Sprintf("%.0f", r.SteadyRSS), fmt.Sprintf("%.2f", r.CPUIdle),
			fmt.Sprintf("%.2f", r.CPUChurn), strconv.Itoa(r.VS), strconv.Itoa(r.RS), strconv.Itoa(r.SetEntries), critical(r.Critical),
			strconv.Itoa(r.ClusterPorts), strconv.Itoa(r.Probed), strconv.Itoa(r.Answered), benchkit.CSVNotes(r.Proxy, r.Notes)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readResults reads the rows of results.csv files (writeReport's columns), in order.
func readResults(paths []string) ([]result, error) {
	rows, err := benchkit.ReadCSV(paths)
	if err != nil {
		return nil, err
	}
	out := make([]result, 0, len(rows))
	for _, row := range rows {
		num := func(name string) float64 { return benchkit.Num(row[name]) }
		r := result{Proxy: row["proxy"], Services: int(num("services")), Endpoints: int(num("endpoints")),
			ColdStart: time.Duration(num("cold_start_s") * float64(time.Second)), SetsDone: time.Duration(num("sets_complete_s") * float64(time.Second)),
			P50: time.Duration(num("change_p50_ms") * float64(time.Millisecond)), P99: time.Duration(num("change_p99_ms") * float64(time.Millisecond)),
			Changes: int(num("changes")), PeakRSS: num("rss_peak_mib"), SteadyRSS: num("rss_steady_mib"),
			CPUIdle: num("cpu_idle_s_per_min"), CPUChurn: num("cpu_churn_s_per_min"),
			ClusterPorts: int(num("cluster_ports_programmed")), Probed: int(num("probe_sent")), Answered: int(num("probe_answered"))}
		if n := row["notes"]; n != "" {
			r.Notes = strings.Split(n, "; ")
		}
		out = append(out, r)
	}
	return out, nil
}

// writeReport writes results.md, results.csv and chart.png; it is called after every
// row, so a run cut short still leaves what it measured.
func writeReport(dir, machine, workload string, steps []int, rs []result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "results.csv"), rs); err != nil {
		return err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Scale benchmark: ipvs-proxier, kube-proxy (IPVS and nftables modes), kube-router\n\nRun %s on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), machine)
	b.WriteString("Same apiserver objects, same kernel, one proxy at a time on a wiped node. " + workload + ". Absolute times on an emulated (TCG) VM on shared cores are not stable; compare the proxies within a step.\n\n")
	b.WriteString("Cold start: process start to every ClusterIP port of the workload programmed in the proxy's data path: for IPVS (ours, kube-proxy's IPVS mode, kube-router) its virtual server with all its real servers; for kube-proxy's nftables mode the port's element in the `service-ips` map of `table ip kube-proxy` going to the port's chain, which sends to all its endpoints (a DNAT map, or endpoint chains); a proxy that did not get there says how many ports it had programmed when the step's budget ran out. Probe: at that moment, one HTTP request from a client netns to each of a sample of the Services (their endpoints answer in a pod netns), answered / sent. Change latency: the API write to the data path showing the change. Critical Services: process start to the apiserver's Service (and the cluster DNS Service where there is one) programmed ahead of the others, from ours' log; sets complete: and every workload ClusterIP in the proxy's ClusterIP set (`KUBE-CLUSTER-IP`, kube-router's `kube-router-svip-prt`, kube-proxy's nftables `cluster-ips`). CPU: the proxy's and that of the programs it runs (iptables, ipset), counted together. Set members: ipset's, or the elements of our nftables tables for `ipvs-proxier nftables` (`--rules-backend=nftables`).\n\n")
	b.WriteString("| Services × endpoints | proxy | cold start (s) | probe answered | critical Services (s) | sets complete (s) | change p50 (ms) | change p99 (ms) | changes | RSS steady / peak (MiB) | CPU idle / churn (s/min) | Service ports (VS) | backends (RS) | set members |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var names []string
	for _, r := range rs {
		names = append(names, r.Proxy)
		fmt.Fprintf(&b, "| %d × %d | %s | %s | %s | %s | %s | %s | %s | %d | %.0f / %.0f | %.2f / %.2f | %d | %d | %d |\n", r.Services, r.Endpoints, r.Proxy,
			r.coldCell(), r.probeCell(), critical(r.Critical), secs(r.SetsDone), ms(r.P50), ms(r.P99), r.Changes, r.SteadyRSS, r.PeakRSS, r.CPUIdle, r.CPUChurn, r.VS, r.RS, r.SetEntries)
	}
	for _, c := range benchkit.Caveats(names) {
		b.WriteString("\n" + c + ".\n")
	}
	if notes := benchkit.NoteLines(rs, func(r result) (string, int, []string) { return r.Proxy, r.Services, r.Notes }); notes != "" {
		b.WriteString("\nNotes:\n" + notes)
	}
	fmt.Fprintf(&b, "\n![change latency and memory](chart.png)\n\nReproduce: `%s make bench-scale` (or `cd e2e && go run ./scalebench`).\n", reproduceEnv(steps))
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return chart(filepath.Join(dir, "chart.png"), chartTitle(machine, workload), rs)
}

// reproduceEnv is the environment that reproduces the run: the steps, and every other
// SVC_ and BENCH_ setting it had except where its output went, sorted.
func reproduceEnv(steps []int) string {
	vars := []string{"SVC_SCALE_STEPS=" + benchkit.JoinInts(steps)}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(name, "SVC_") || strings.HasPrefix(name, "BENCH_")) && !slices.Contains([]string{"SVC_SCALE_STEPS", "BENCH_OUT", "BENCH_PROFILE", "BENCH_DAEMON_LOG"}, name) {
			if _, v, _ := strings.Cut(kv, "="); strings.ContainsAny(v, " \t") {
				kv = name + "=" + strconv.Quote(v) // "ipvs-proxier nftables" is one proxy
			}
			vars = append(vars, kv)
		}
	}
	slices.Sort(vars[1:])
	return strings.Join(vars, " ")
}
