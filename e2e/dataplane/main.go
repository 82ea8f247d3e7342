// Command dataplane measures the data path through a Service (`make bench-dataplane`):
// short-connection and keep-alive HTTP requests through one ClusterIP, and hairpin
// throughput (a pod through its own Service), with 1,000 and 30,000 Services programmed,
// for ipvs-proxier, stock kube-proxy v1.37 in its IPVS, iptables and nftables modes and
// kube-router's service proxy (harness.KubeRouterVersion; benchkit.KubeRouterCaveat).
// Same VM, same apiserver objects, one proxy at a time on a wiped node. The load
// generator is the agent's (`agent load`, package loadgen), run in the VM's network
// namespaces; each run also loads the pods directly as its baseline. Results go to bench/results/dataplane.{md,csv,png}.
//
// Environment (defaults in brackets): DP_SIZES [1000,30000] Services x SVC_ENDPOINTS [4]
// besides the measured ones; DP_PROXIES [ipvs-proxier,ipvs,ipvs-proxier,ipvs,ipvs-proxier,
// iptables,nftables] (ipvs, iptables and nftables are kube-proxy's modes, kube-router
// kube-router's service proxy; a proxy named
// again is measured again and the ratios take medians; ipvs-proxier-stopped and
// ipvs-proxier-bare are ours stopped during the loads, the second without the rules
// kube-proxy's IPVS mode lacks; ipvs-adopting is kube-proxy's IPVS mode started on the
// state ours left, see adopt.go; iptables-legacy is kube-proxy's iptables mode on the
// legacy iptables backend, see legacy.go); DP_PROXIES_<size> [unset] the same for one size; DP_SECONDS [30] per load; DP_WARMUP [5] seconds before
// each; DP_WORKERS [8] concurrent requests; DP_STREAM_SECONDS [10] per hairpin stream;
// BENCH_STEP_BUDGET [30m] for a proxy to program a size, DP_BUDGETS [unset;
// e.g. 1000=20m,30000=8m] by size; SVC_CREATE_PARALLEL [16];
// BENCH_OUT [<repo>/bench/results]; BENCH_LOAD [etcd; api: through the apiserver].
// `dataplane chart OUT.png TITLE CSV...` draws rows gathered from several runs;
// `dataplane gather ALL.csv RUN.csv...` gathers them (gather.go).
package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

func main() {
	if benchkit.Subcommand("dataplane", map[string]func([]string) error{"chart": chartCommand, "gather": gatherCommand}) {
		return
	}
	benchkit.Main(run)
}

// settings are the run's knobs, from the environment.
type settings struct {
	sizes   []int
	proxies []benchkit.Proxy
	// proxiesBySize overrides proxies by size (DP_PROXIES_<size>).
	proxiesBySize        map[int][]benchkit.Proxy
	load, warmup, stream time.Duration
	workers              int
	budget               time.Duration
	// budgets overrides budget by size (DP_BUDGETS).
	budgets                     map[int]time.Duration
	out                         string
	endpoints, createInParallel int
}

// stoppedOurs in DP_PROXIES is ipvs-proxier stopped (SIGSTOP) once ready, for the loads:
// at 30,000 Services its periodic full sync took a third of a vCPU of the emulated VM
// during the loads, which the load generator and the servers share.
const stoppedOurs = "ipvs-proxier-stopped"

// stoppedSuffix ends the name of ours stopped during the loads (its rows, and what
// measure checks).
const stoppedSuffix = ", stopped during the loads"

// bareOurs in DP_PROXIES is ours stopped during the loads, with the filter rules on a new
// connection's path that kube-proxy's IPVS mode lacks deleted first (stripExtraRules):
// against stoppedOurs, what those rules cost, measured by removing them.
const bareOurs = "ipvs-proxier-bare"

// bareSuffix ends the name of bareOurs' rows.
const bareSuffix = ", stopped, without the rules kube-proxy IPVS lacks"

// stoppedDuringLoads says whether the proxy named so is stopped during the loads.
func stoppedDuringLoads(name string) bool {
	return strings.HasSuffix(name, stoppedSuffix) || strings.HasSuffix(name, bareSuffix)
}

// defaultProxies interleaves ipvs-proxier with kube-proxy's IPVS mode, the pair with a
// ±3 % target: one proxy measured twice at 1,000 differed by 23 % (the shared host
// drifts), so each is measured more than once, between the other's runs, and the
// ratio is of medians.
const defaultProxies = "ipvs-proxier,ipvs,ipvs-proxier,ipvs,ipvs-proxier,iptables,nftables"

func readSettings() (settings, error) {
	s := settings{workers: benchkit.EnvInt("DP_WORKERS", 8), endpoints: benchkit.EnvInt("SVC_ENDPOINTS", 4),
		createInParallel: benchkit.EnvInt("SVC_CREATE_PARALLEL", 16),
		load:             time.Duration(benchkit.EnvInt("DP_SECONDS", 30)) * time.Second,
		warmup:           time.Duration(benchkit.EnvInt("DP_WARMUP", 5)) * time.Second,
		stream:           time.Duration(benchkit.EnvInt("DP_STREAM_SECONDS", 10)) * time.Second,
		out:              benchkit.Env("BENCH_OUT", filepath.Join(harness.RepoRoot(), "bench/results"))}
	var err error
	if s.sizes, err = benchkit.EnvInts("DP_SIZES", "1000,30000", 1); err != nil {
		return s, err
	}
	if s.proxies, err = parseProxies("DP_PROXIES", benchkit.Env("DP_PROXIES", defaultProxies)); err != nil {
		return s, err
	}
	s.proxiesBySize = map[int][]benchkit.Proxy{}
	for _, n := range s.sizes {
		name := fmt.Sprintf("DP_PROXIES_%d", n)
		if v := benchkit.Env(name, ""); v != "" {
			if s.proxiesBySize[n], err = parseProxies(name, v); err != nil {
				return s, err
			}
		}
	}
	if s.budget, err = time.ParseDuration(benchkit.Env("BENCH_STEP_BUDGET", "30m")); err != nil {
		return s, fmt.Errorf("BENCH_STEP_BUDGET: %w", err)
	}
	s.budgets, err = parseBudgets(benchkit.Env("DP_BUDGETS", ""))
	return s, err
}

// parseProxies reads a list of proxies (DP_PROXIES, or DP_PROXIES_<size>, named env).
// A proxy named again is measured again (result.Run counts): the ratios take each
// proxy's median, and its runs' spread shows how far the VM drifts.
func parseProxies(env, v string) ([]benchkit.Proxy, error) {
	var out []benchkit.Proxy
	for _, f := range strings.Split(v, ",") {
		var p benchkit.Proxy
		switch f = strings.TrimSpace(f); f {
		case "ipvs-proxier":
			p = benchkit.IPVSProxier
		case stoppedOurs:
			p = benchkit.IPVSProxier
			p.Name += stoppedSuffix
		case bareOurs:
			p = benchkit.IPVSProxier
			p.Name += bareSuffix
		case "ipvs", "iptables", "nftables":
			p = benchkit.KubeProxy(f)
		case adoptingKP:
			p = benchkit.KubeProxy("ipvs")
			p.Name += adoptSuffix
		case legacyKP:
			p = kubeProxyLegacy()
		case benchkit.KubeRouter.Name:
			p = benchkit.KubeRouter
		default:
			return nil, fmt.Errorf("%s: %q is not ipvs-proxier, %s, %s, ipvs, %s, iptables, %s, nftables or %s", env, f, stoppedOurs, bareOurs, adoptingKP, legacyKP, benchkit.KubeRouter.Name)
		}
		out = append(out, p)
	}
	return out, nil
}

// proxiesFor are the proxies measured with n Services, in order: DP_PROXIES_<n> where
// set (kube-proxy's IPVS mode needs 10 min to be ready at 1,000 and is not ready in 8 at
// 30,000, so a run spends its time better on other proxies at one size), else DP_PROXIES.
func (s settings) proxiesFor(n int) []benchkit.Proxy {
	if ps, ok := s.proxiesBySize[n]; ok {
		return ps
	}
	return s.proxies
}

// parseBudgets reads DP_BUDGETS, "SIZE=DURATION,...": kube-proxy's IPVS mode needed
// ~10 min to be ready at 1,000 Services in the VM, while at 30,000 its iptables mode had
// no completed sync after 15 min and its IPVS mode none after 8, so one budget for both
// sizes either cut the first short or spent an hour waiting at the second.
func parseBudgets(v string) (map[int]time.Duration, error) {
	out := map[int]time.Duration{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, d, ok := strings.Cut(f, "=")
		size, err := strconv.Atoi(n)
		if !ok || err != nil {
			return nil, fmt.Errorf("DP_BUDGETS: %q is not SIZE=DURATION", f)
		}
		if out[size], err = time.ParseDuration(d); err != nil {
			return nil, fmt.Errorf("DP_BUDGETS: %w", err)
		}
	}
	return out, nil
}

// budgetFor is the time a proxy has to be ready with n Services.
func (s settings) budgetFor(n int) time.Duration {
	if d, ok := s.budgets[n]; ok {
		return d
	}
	return s.budget
}

func run() error {
	s, err := readSettings()
	if err != nil {
		return err
	}
	ctx := context.Background()
	cp, node, stop, err := benchkit.StartNode(ctx)
	if err != nil {
		return err
	}
	defer stop()
	t, err := setUp(ctx, cp, node)
	if err != nil {
		return err
	}
	machine := benchkit.Machine(node)
	loader, err := benchkit.LoaderClient(cp.RESTCfg)
	if err != nil {
		return err
	}
	w := &benchkit.Workload{Client: loader, Node: workloadNode, Endpoints: s.endpoints, Parallel: s.createInParallel, Etcd: benchkit.LoadVia(cp)}
	var results []result
	for _, n := range s.sizes {
		benchkit.Logf("creating %d Services x %d endpoints", n, s.endpoints)
		start := time.Now()
		// The last proxy measured would follow every new Service, and the emulation of
		// its work takes host CPU from the apiserver while it loads.
		if err := benchkit.Wipe(node); err != nil {
			return err
		}
		if err := w.Grow(ctx, n); err != nil {
			return err
		}
		benchkit.Logf("%d Services ready in the apiserver after %v", n, time.Since(start).Round(time.Second))
		for _, p := range s.proxiesFor(n) {
			run := 1 + runsOf(results, p.Name, n)
			if run > 1 && measured(results, p.Name, n) == nil {
				benchkit.Logf("%s @ %d: not measured again (its first run measured nothing)", p.Name, n)
				continue
			}
			r := measure(node, t, s, p, n)
			r.Run = run
			results = append(results, r)
			benchkit.Logf("%s @ %d: %s", r.label(), n, r.summary())
			if err := writeReport(s.out, machine, s, results); err != nil {
				return err
			}
		}
	}
	benchkit.Logf("results in %s", s.out)
	return nil
}
