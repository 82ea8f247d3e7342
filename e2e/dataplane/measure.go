package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/loadgen"
)

// result is one row: one proxy with n Services programmed.
type result struct {
	Services int
	Proxy    string
	// Run counts the proxy's measurements at this size, from 1.
	Run int
	// Ready is the time from the proxy's start to its first completed sync with the
	// measured Services answering; 0 when that did not happen within the budget. For
	// kube-proxy adopting ours' state, from kube-proxy's start (ours' is in Notes).
	Ready            time.Duration
	Short, KeepAlive loadgen.Result
	// Baseline is short connections from the client to the Service's four pods
	// directly (no Service, worker i to pod i mod 4), half just before Short and half
	// just after it (bracket), meant to show how fast the VM ran at the time (the host
	// drifts up to twice as fast between runs). The ratios also compare Short ÷
	// Baseline (relative); with the whole baseline measured before
	// Short, it varied more than the Service path (CV 17 % vs 7 %), so those ratios are
	// shown beside the plain ones, not instead of them.
	Baseline loadgen.Result
	// Hairpin is the hairpin pod's stream to itself, by path (hpDirect, ...).
	Hairpin map[string]loadgen.Result
	// ProxyCPU is the proxy's CPU (with the programs it ran) during the two request
	// loads, in seconds per minute: what it took from the VM the load ran on.
	ProxyCPU float64
	Notes    []string
}

func (r *result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	benchkit.Logf("%s @ %d: %s", r.label(), r.Services, r.Notes[len(r.Notes)-1])
}

// label names the row: the proxy, and its run after the first.
func (r result) label() string {
	if r.Run > 1 {
		return fmt.Sprintf("%s (run %d)", r.Proxy, r.Run)
	}
	return r.Proxy
}

func (r result) summary() string {
	if r.Ready == 0 {
		return "not measured: " + strings.Join(r.Notes, "; ")
	}
	s := fmt.Sprintf("ready in %.0f s; pods directly %.0f req/s; short %.0f req/s (connect p50 %.2f p99 %.2f p99.9 %.2f ms, %d errors); keep-alive %.0f req/s (p99 %.2f ms); proxy CPU %.1f s/min; hairpin",
		r.Ready.Seconds(), r.Baseline.RPS, r.Short.RPS, r.Short.Connect.P50, r.Short.Connect.P99, r.Short.Connect.P999, r.Short.Errors,
		r.KeepAlive.RPS, r.KeepAlive.Latency.P99, r.ProxyCPU)
	for _, p := range hairpinPaths {
		s += fmt.Sprintf(" %s %.0f Mbit/s;", p, r.Hairpin[p].Mbps)
	}
	return s
}

var hairpinPaths = []string{hpDirect, hpClusterIP, hpNodePort, hpNodePortETPL}

// measure runs proxy p on a wiped node with n workload Services and measures the loads.
func measure(node *harness.Node, t targets, s settings, p benchkit.Proxy, n int) result {
	r := result{Services: n, Proxy: p.Name, Hairpin: map[string]loadgen.Result{}}
	if err := benchkit.Wipe(node); err != nil {
		r.note("wipe: %v", err)
		return r
	}
	if adopting(p.Name) {
		ours, err := handOver(node, t, s, n)
		if ours != "" {
			r.note("%s", ours)
		}
		if err != nil {
			r.note("%v", err)
			return r
		}
	}
	start := time.Now()
	if _, err := node.MustExec(p.Start); err != nil {
		r.note("start: %v", err)
		return r
	}
	if err := waitReady(node, p, n, t, start.Add(s.budgetFor(n))); err != nil {
		r.note("not ready within %v: %v; by then: %s", s.budgetFor(n), err, progress(node))
		return r
	}
	r.Ready = time.Since(start)
	benchkit.Logf("%s @ %d: ready after %v", p.Name, n, r.Ready.Round(time.Second))
	if adopting(p.Name) {
		r.note("kube-proxy's after its first sync: %s", progress(node))
	}
	time.Sleep(10 * time.Second) // let the start's aftermath (a first periodic sync) settle
	_, _, cpu0, cpuErr := benchkit.Proc(node, p)
	loadStart := time.Now()
	if stoppedDuringLoads(p.Name) { // the data path alone, without ours' CPU in the VM
		if _, err := node.MustExec("kill -STOP $(cat " + p.PIDFile + ")"); err != nil {
			r.note("stop: %v", err)
		}
		defer func() {
			if _, err := node.MustExec("kill -CONT $(cat " + p.PIDFile + ")"); err != nil {
				r.note("continue: %v", err)
			}
		}()
	}
	if strings.HasSuffix(p.Name, bareSuffix) {
		out, err := node.MustExec(stripExtraRules)
		if err != nil {
			r.note("strip the rules kube-proxy's IPVS mode lacks: %v", err)
		} else if out = strings.TrimSpace(out); out != "4" {
			r.note("stripped %s rules, not the 4 kube-proxy's IPVS mode lacks", out)
		}
	}
	var err error
	before, err := load(node, client, "short", t.pods, s.load/2, s.workers, s.warmup)
	if err != nil {
		r.note("pods directly, before: %v", err)
	}
	if r.Short, err = load(node, client, "short", t.web, s.load, s.workers, s.warmup); err != nil {
		r.note("short: %v", err)
	}
	after, err := load(node, client, "short", t.pods, s.load/2, s.workers, s.warmup)
	if err != nil {
		r.note("pods directly, after: %v", err)
	}
	r.Baseline = bracket(before, after)
	if r.KeepAlive, err = load(node, client, "keepalive", t.web, s.load, s.workers, s.warmup); err != nil {
		r.note("keep-alive: %v", err)
	}
	if _, _, cpu1, err := benchkit.Proc(node, p); err == nil && cpuErr == nil {
		r.ProxyCPU = (cpu1 - cpu0).Seconds() / time.Since(loadStart).Minutes()
	}
	for _, h := range t.hairpin {
		res, err := load(node, hairpinPod, "stream", h.addr, s.stream, 1, 2*time.Second)
		if err != nil {
			r.note("hairpin %s: %v", h.name, err)
		}
		r.Hairpin[h.name] = res
	}
	return r
}

// stripExtraRules deletes (and counts) the filter rules ours puts on a new connection's
// path that kube-proxy's IPVS mode has not: the jumps to the unallocated-ClusterIP check
// from FORWARD and OUTPUT, and KUBE-PROXY-FIREWALL's no-endpoints REJECT and
// ETP=Local check. Ours is stopped, so nothing puts them back during the loads.
const stripExtraRules = `n=0; iptables -S | grep -e 'kubernetes unallocated cluster ips' -e 'service has no endpoints' -e '-j KUBE-EXTERNAL-NO-LOCAL' | sed 's/^-A/-D/' > /tmp/bare-rules
while read -r l; do eval iptables "$l" && n=$((n+1)); done < /tmp/bare-rules; echo $n`

// progressTimeout bounds progress: at 30,000 Services kube-proxy's nftables mode was
// still in its first `nft -f` after 15 minutes, and `ipset save` waited behind it in
// the kernel (state D, where no signal reaches it) for as long.
const progressTimeout = 30 * time.Second

// progress counts what the proxy has programmed so far, or says it could not tell within
// progressTimeout (the command is left to finish in the VM).
func progress(node *harness.Node) string {
	done := make(chan string, 1)
	go func() {
		out, err := node.MustExec(`echo "$(ipvsadm -Ln | grep -cE '^(TCP|UDP|SCTP)') virtual servers, $(ipset save 2>/dev/null | grep -c '^add ') ipset entries, $(iptables-save | grep -c '^-A') iptables rules, $([ -e /proc/net/ip_tables_names ] && iptables-legacy-save | grep -c '^-A') legacy iptables rules, $(nft list ruleset 2>/dev/null | grep -c .) lines of nftables ruleset"`)
		if err != nil {
			out = err.Error()
		}
		done <- strings.TrimSpace(out)
	}()
	select {
	case out := <-done:
		return out
	case <-time.After(progressTimeout):
		return fmt.Sprintf("unknown: counting the kernel's objects took over %v (the proxy's own write holds the kernel's lock)", progressTimeout)
	}
}

// load runs `agent load` in netns and parses its result.
func load(node *harness.Node, netns, mode, target string, d time.Duration, workers int, warmup time.Duration) (loadgen.Result, error) {
	var r loadgen.Result
	out, err := node.MustExec(fmt.Sprintf("ip netns exec %s /agent load %s %s %d %d %d", netns, mode, target,
		int(d.Seconds()), workers, int(warmup.Seconds())))
	if err != nil {
		return r, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return r, fmt.Errorf("%w: %s", err, out)
	}
	return r, nil
}

// waitReady waits until the proxy has finished a sync (kube-proxy and ipvs-proxier both
// sync only once their informers hold every Service, so that sync programmed them all;
// kube-router serves no metrics here, so for it every workload ClusterIP has its IPVS
// virtual server) and the measured ClusterIP and the hairpin paths answer.
func waitReady(node *harness.Node, p benchkit.Proxy, n int, t targets, deadline time.Time) error {
	var last error
	for time.Now().Before(deadline) {
		if last = ready(node, p, n, t); last == nil {
			return nil
		}
		time.Sleep(5 * time.Second)
	}
	return last
}

func ready(node *harness.Node, p benchkit.Proxy, n int, t targets) error {
	if p.Metrics == "" {
		out, err := node.MustExec(clusterVirtualServers)
		if err != nil {
			return err
		}
		if k, _ := strconv.Atoi(strings.TrimSpace(out)); k < n {
			return fmt.Errorf("%d of the %d workload ClusterIPs have a virtual server", k, n)
		}
	} else {
		m, err := node.Get("", p.Metrics)
		if err != nil {
			return err
		}
		if !synced(m.Body) {
			return fmt.Errorf("no completed sync yet")
		}
	}
	if r, err := node.Get(client, "http://"+t.web+"/"); err != nil || r.Code != 200 {
		return fmt.Errorf("the measured ClusterIP %s: %v %+v", t.web, err, r)
	}
	for _, h := range t.hairpin {
		if r, err := load(node, hairpinPod, "stream", h.addr, time.Second, 1, 0); err != nil || r.Bytes == 0 {
			return fmt.Errorf("hairpin %s: %v %+v", h.name, err, r)
		}
	}
	return nil
}

// clusterVirtualServers prints how many IPVS virtual servers are on a ClusterIP (the
// benchmarks' service range, 10.96.0.0/12), with real servers or not.
const clusterVirtualServers = `ipvsadm -Ln | grep -cE '^TCP +10\.(9[6-9]|10[0-9]|11[01])\.' || true`

// synced says whether a /metrics text shows a completed proxy-rules sync: a
// kubeproxy_sync_proxy_rules_last_timestamp_seconds sample above 0, with or without
// labels.
func synced(metrics string) bool {
	const name = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
	for _, l := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(l, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil && v > 0 {
			return true
		}
	}
	return false
}
