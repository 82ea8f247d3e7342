package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// ratio is one comparison the issue sets a target for, or asks to show.
type ratio struct {
	what   string
	value  float64
	target string
	// met is "yes", "no", or "" where the row only shows a factor.
	met string
}

// ratios compares ipvs-proxier at the largest size with itself at the smallest, and
// with each kube-proxy mode at each size: the targets of the data-plane issue. Each
// side is the median of its runs at that size.
func ratios(rs []result) []ratio {
	var out []ratio
	sizes := sizesOf(rs)
	check := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	const ours = "ipvs-proxier"
	for _, n := range sizes {
		for _, p := range []string{ours, kubeProxyIPVS, kubeProxyIPVS + adoptSuffix} {
			if runs := measuredRuns(rs, p, n); len(runs) > 1 {
				out = append(out, ratio{fmt.Sprintf("%s: short-connection req/s, highest ÷ lowest of %d runs, %d Services (the VM's drift)", display(p), len(runs), n),
					spread(runs, func(r result) float64 { return r.Short.RPS }), "(shown)", ""})
				out = append(out, ratio{fmt.Sprintf("%s: connect p99, highest ÷ lowest of %d runs, %d Services", display(p), len(runs), n),
					spread(runs, func(r result) float64 { return r.Short.Connect.P99 }), "(shown)", ""})
			}
		}
	}
	if len(sizes) > 1 {
		// Ours against itself across sizes; the same for ours stopped during the loads
		// (the data path without the daemon's CPU use in the VM) and without the rules
		// kube-proxy IPVS lacks, where measured.
		for _, name := range []string{ours, ours + stoppedSuffix, ours + bareSuffix} {
			lo, hi := measured(rs, name, sizes[0]), measured(rs, name, sizes[len(sizes)-1])
			if lo == nil || hi == nil {
				continue
			}
			v := hi.Short.RPS / lo.Short.RPS
			out = append(out, ratio{fmt.Sprintf("%s short-connection req/s, %d ÷ %d Services", name, hi.Services, lo.Services), v, "≥ 0.95", check(v >= 0.95)})
			if a, b := relative(rs, name, hi.Services), relative(rs, name, lo.Services); a > 0 && b > 0 {
				out = append(out, ratio{fmt.Sprintf("%s short-connection req/s ÷ pods directly, %d ÷ %d Services", name, hi.Services, lo.Services), a / b, "≥ 0.95", check(a/b >= 0.95)})
			}
			v = hi.Short.Connect.P99 / lo.Short.Connect.P99
			out = append(out, ratio{fmt.Sprintf("%s connect p99, %d ÷ %d Services", name, hi.Services, lo.Services), v, "≤ 1.1", check(v <= 1.1)})
		}
	}
	for _, n := range sizes {
		// What the rules ours has and kube-proxy IPVS lacks cost: ours stopped with them
		// ÷ ours stopped without them (1 costs nothing; below 1 is their cost).
		with, without := measured(rs, ours+stoppedSuffix, n), measured(rs, ours+bareSuffix, n)
		if with == nil || without == nil {
			continue
		}
		out = append(out, ratio{fmt.Sprintf("short-connection req/s, ours stopped with ÷ without the rules kube-proxy IPVS lacks, %d Services", n), with.Short.RPS / without.Short.RPS, "(shown)", ""})
		if a, b := relative(rs, ours+stoppedSuffix, n), relative(rs, ours+bareSuffix, n); a > 0 && b > 0 {
			out = append(out, ratio{fmt.Sprintf("the same, each run ÷ the pods directly, %d Services", n), a / b, "(shown)", ""})
		}
		out = append(out, ratio{fmt.Sprintf("connect p99, ours stopped with ÷ without those rules, %d Services", n), with.Short.Connect.P99 / without.Short.Connect.P99, "(shown)", ""})
	}
	for _, n := range sizes {
		o := measured(rs, ours, n)
		if o == nil {
			continue
		}
		for _, kp := range []string{kubeProxyIPVS, kubeProxyIPVS + adoptSuffix, "kube-proxy iptables", "kube-proxy iptables" + legacySuffix, "kube-proxy nftables", benchkit.KubeRouter.Name} {
			k := measured(rs, kp, n)
			if k == nil {
				continue
			}
			// Adopting or not, kube-proxy's IPVS mode serves through the same data path.
			ipvs := kp == kubeProxyIPVS || adopting(kp)
			target, met := "(shown)", ""
			v := o.Short.RPS / k.Short.RPS
			if ipvs {
				target, met = "≥ 0.97", check(v >= 0.97)
			}
			out = append(out, ratio{fmt.Sprintf("short-connection req/s, %s ÷ %s, %d Services", ours, display(kp), n), v, target, met})
			if a, b := relative(rs, ours, n), relative(rs, kp, n); a > 0 && b > 0 {
				if ipvs {
					met = check(a/b >= 0.97)
				}
				out = append(out, ratio{fmt.Sprintf("short-connection req/s ÷ pods directly, %s ÷ %s, %d Services", ours, display(kp), n), a / b, target, met})
			}
			v = o.KeepAlive.RPS / k.KeepAlive.RPS
			if ipvs {
				met = check(v >= 0.97)
			}
			out = append(out, ratio{fmt.Sprintf("keep-alive req/s, %s ÷ %s, %d Services", ours, display(kp), n), v, target, met})
			out = append(out, ratio{fmt.Sprintf("connect p99, %s ÷ %s, %d Services", ours, display(kp), n), o.Short.Connect.P99 / k.Short.Connect.P99, "(shown)", ""})
		}
	}
	return out
}

// display names kube-proxy's IPVS mode, which the rows call plain "kube-proxy" as the
// scale benchmark does.
func display(proxy string) string {
	if rest, ok := strings.CutPrefix(proxy, kubeProxyIPVS); ok && (rest == "" || rest == adoptSuffix) {
		return "kube-proxy IPVS" + rest
	}
	return proxy
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// writeReport writes dataplane.md, dataplane.csv and dataplane.png; it is called after
// every row, so a run cut short still leaves what it measured.
func writeReport(dir, machine string, s settings, rs []result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "dataplane.csv"), rs); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Data-plane benchmark: requests through a Service\n\nRun %s on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), machine)
	fmt.Fprintf(&b, "`make bench-dataplane` with DP_SIZES=%s, %d endpoints per workload Service; each load %v after %v of warm-up, %d concurrent requests; hairpin streams %v.\n\n",
		benchkit.JoinInts(s.sizes), s.endpoints, s.load, s.warmup, s.workers, s.stream)
	b.WriteString("One proxy at a time on a wiped node, same VM, same apiserver objects. The measured ClusterIP has four pods on the node (`agent httpd`); the workload's Services (half NodePort, a tenth ETP=Local, a tenth with session affinity; their endpoints on another node) are programmed beside it. kube-proxy's IPVS mode, where named \"adopting ours' state\", starts on what ours programmed (its wiped-node first sync runs `ipset add` per entry). Short: a new TCP connection per HTTP request from a client netns outside the cluster (masqueraded); pods directly: the same from the same client to the four pods' own addresses (no Service; routed by the node), half just before and half just after, as the run's baseline (the host drifts up to twice as fast between runs); the ratios marked \"÷ pods directly\" divide each run by its own, but the baseline has measured noisier than the Service path, so read them beside the plain ratios; keep-alive: requests on open connections. Hairpin: the pod streams to its own sink for the time given, through each path. Absolute numbers on an emulated (TCG) VM on shared cores mean little; compare within a size.\n\n")
	b.WriteString("## Ratios\n\n| comparison | ratio | target | met |\n|---|---|---|---|\n")
	for _, r := range ratios(rs) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.what, f2(r.value), r.target, r.met)
	}
	b.WriteString("\n## Requests through one ClusterIP\n\n| Services | proxy | ready (s) | pods directly req/s | short req/s | ÷ pods directly | connect p50 / p99 / p99.9 (ms) | short latency p99 (ms) | short errors | keep-alive req/s | keep-alive p99 (ms) | proxy CPU under load (s/min) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		if r.Ready == 0 {
			fmt.Fprintf(&b, "| %d | %s | not ready | | | | | | | | | |\n", r.Services, r.label())
			continue
		}
		rel := ""
		if r.Baseline.RPS > 0 {
			rel = f2(r.Short.RPS / r.Baseline.RPS)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s / %s / %s | %s | %d | %s | %s | %s |\n", r.Services, r.label(), f0(r.Ready.Seconds()),
			f0(r.Baseline.RPS), f0(r.Short.RPS), rel, f2(r.Short.Connect.P50), f2(r.Short.Connect.P99), f2(r.Short.Connect.P999), f2(r.Short.Latency.P99),
			r.Short.Errors, f0(r.KeepAlive.RPS), f2(r.KeepAlive.Latency.P99), f2(r.ProxyCPU))
	}
	b.WriteString("\n## Hairpin: a pod to itself, one stream (Mbit/s)\n\n| Services | proxy | " + strings.Join(hairpinPaths, " | ") + " |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		if r.Ready == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s |", r.Services, r.label())
		for _, p := range hairpinPaths {
			fmt.Fprintf(&b, " %s |", f0(r.Hairpin[p].Mbps))
		}
		b.WriteString("\n")
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Proxy)
	}
	for _, c := range benchkit.Caveats(names) {
		b.WriteString("\n" + c + ".\n")
	}
	b.WriteString("\n![requests per second and connect p99 against the number of Services](dataplane.png)\n")
	if notes := benchkit.NoteLines(rs, func(r result) (string, int, []string) { return r.label(), r.Services, r.Notes }); notes != "" {
		b.WriteString("\n## Notes\n\n" + notes)
	}
	if err := os.WriteFile(filepath.Join(dir, "dataplane.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return chart(filepath.Join(dir, "dataplane.png"), "Requests through one Service beside the workload's Services; "+machine, rs)
}

// csvColumns are the CSV's columns.
var csvColumns = []string{"services", "proxy", "run", "ready_s", "short_rps", "connect_p50_ms", "connect_p99_ms", "connect_p999_ms", "short_p99_ms", "short_errors",
	"keepalive_rps", "keepalive_p99_ms", "keepalive_errors", "proxy_cpu_s_per_min", "pods_directly_rps", "hairpin_pod_mbps", "hairpin_clusterip_mbps", "hairpin_nodeport_mbps", "hairpin_nodeport_local_mbps", "notes"}

// writeCSV writes the rows in csvColumns.
func writeCSV(path string, rs []result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	_ = w.Write(csvColumns)
	for _, r := range rs {
		row := []string{strconv.Itoa(r.Services), r.Proxy, strconv.Itoa(r.Run), f2(r.Ready.Seconds()), f0(r.Short.RPS), f2(r.Short.Connect.P50), f2(r.Short.Connect.P99), f2(r.Short.Connect.P999),
			f2(r.Short.Latency.P99), strconv.Itoa(r.Short.Errors), f0(r.KeepAlive.RPS), f2(r.KeepAlive.Latency.P99), strconv.Itoa(r.KeepAlive.Errors), f2(r.ProxyCPU), f0(r.Baseline.RPS)}
		for _, p := range hairpinPaths {
			row = append(row, f0(r.Hairpin[p].Mbps))
		}
		_ = w.Write(append(row, benchkit.CSVNotes(r.Proxy, r.Notes)))
	}
	w.Flush()
	return w.Error()
}
