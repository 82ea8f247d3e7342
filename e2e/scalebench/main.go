// Command scalebench measures ipvs-proxier against kube-proxy's IPVS and nftables modes
// and kube-router's service proxy at growing scale, in the same run, on the same VM
// kernel, against the same apiserver objects (`make bench-scale`). For each step of
// SVC_SCALE_STEPS Services x SVC_ENDPOINTS endpoints, each proxy in turn, on a wiped
// node: cold start (read from each one's data path, datapath.go, and checked by
// requests to a sample, probe.go), change latency, memory, CPU idle and under churn, and
// kernel object counts. Results go to bench/results/ as a markdown table, a CSV and a
// PNG chart. `scalebench chart OUT.png TITLE CSV...` draws the chart of rows gathered
// from several runs; `scalebench gather ALL.csv RESULTS.csv...` gathers them (a newer row
// of the same step and proxy replaces the older).
//
// Environment (defaults in brackets): SVC_SCALE_STEPS [1000,5000,10000,30000],
// SVC_ENDPOINTS [4], SVC_NODEPORT_EVERY [2: half the Services are NodePorts; 100,000
// need 4], SVC_CREATE_PARALLEL [16], BENCH_STEP_BUDGET [20m] (per proxy and
// step; what does not finish in it is reported as unfinished), BENCH_CHANGES [52],
// BENCH_OUT [<repo>/bench/results], BENCH_FRESH_VM [1: a new apiserver and node VM for
// each step; 0: one for all], BENCH_LOAD [etcd: Services written to etcd
// directly (benchkit/etcdload.go); api: through the apiserver], BENCH_PROXIES [ipvs-proxier,kube-proxy; also "ipvs-proxier nftables": ours with --rules-backend=nftables, "ipvs-proxier routes": ours with --vip-local-routes,
// "kube-proxy nftables": kube-proxy's nftables mode, and kube-router],
// BENCH_PROXIES_<n> [BENCH_PROXIES: the proxies at the step of n Services],
// BENCH_PROFILE [unset: a directory for ipvs-proxier's CPU, heap and allocs profiles at
// each step; `go tool pprof -top <file>`], BENCH_DAEMON_LOG [unset: a directory for
// ipvs-proxier's log at each step, run at --log-level=debug: every sync's time and length,
// to lay beside the changes' start times in the bench's output]. Both name a file
// kind-n.ext, and kind-n-routes.ext (or -nftables) for a variant of ours (stepFile).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

func main() {
	if benchkit.Subcommand("scalebench", map[string]func([]string) error{"chart": chartCommand, "gather": gatherCommand}) {
		return
	}
	benchkit.Main(run)
}

func run() error {
	steps, err := benchkit.EnvInts("SVC_SCALE_STEPS", "1000,5000,10000,30000", 2)
	if err != nil {
		return err
	}
	budget, err := time.ParseDuration(benchkit.Env("BENCH_STEP_BUDGET", "20m"))
	if err != nil {
		return fmt.Errorf("BENCH_STEP_BUDGET: %w", err)
	}
	out := benchkit.Env("BENCH_OUT", filepath.Join(harness.RepoRoot(), "bench/results"))
	fresh := benchkit.Env("BENCH_FRESH_VM", "1") != "0"
	ctx := context.Background()

	for _, n := range steps { // a misspelt proxy fails now, not hours into the run
		if _, err := proxiesAt(n); err != nil {
			return err
		}
	}
	b := &bench{budget: budget, profiles: os.Getenv("BENCH_PROFILE"), daemonLogs: os.Getenv("BENCH_DAEMON_LOG"), changes: benchkit.EnvInt("BENCH_CHANGES", 52)}
	defer b.stopNode()
	var machine string
	var results []result
	for i, n := range steps {
		if i == 0 || fresh {
			if err := b.startNode(ctx); err != nil {
				return err
			}
			machine = benchkit.Machine(b.node)
		}
		benchkit.Logf("creating %d Services x %d endpoints", n, b.w.Endpoints)
		start := time.Now()
		// The last proxy measured would follow every new Service, and the emulation of
		// its work takes host CPU from the apiserver while it loads.
		if err := b.wipe(); err != nil {
			return err
		}
		if err := b.w.Grow(ctx, n); err != nil {
			return err
		}
		benchkit.Logf("%d Services ready in the apiserver after %v", n, time.Since(start).Round(time.Second))
		if err := b.setUpProbe(n); err != nil {
			return err
		}
		ps, _ := proxiesAt(n)
		for _, p := range ps {
			r := b.run(ctx, p, n)
			results = append(results, r)
			benchkit.Logf("%s @ %d: %s", p.Name, n, r.summary())
			if err := writeReport(out, machine, b.w.Describe(), steps, results); err != nil {
				return err
			}
		}
	}
	benchkit.Logf("results in %s", out)
	return nil
}

// startNode starts a new control plane and node VM, after stopping those of the last
// step: a cold start is measured on a new node, and a VM whose kernel held the last
// step's objects is not one (its cold starts ran slower than on a new VM), so by default
// (BENCH_FRESH_VM, not "0") each step has its own.
func (b *bench) startNode(ctx context.Context) error {
	b.stopNode()
	cp, node, stop, err := benchkit.StartNode(ctx)
	if err != nil {
		return err
	}
	loader, err := benchkit.LoaderClient(cp.RESTCfg)
	if err != nil {
		stop()
		return err
	}
	b.node, b.stop, b.extra, b.probeMade = node, stop, nil, false
	b.w = &benchkit.Workload{Client: loader, Node: benchkit.NodeName, Endpoints: benchkit.EnvInt("SVC_ENDPOINTS", 4), Parallel: benchkit.EnvInt("SVC_CREATE_PARALLEL", 16),
		Etcd: benchkit.LoadVia(cp), NodePortEvery: benchkit.EnvInt("SVC_NODEPORT_EVERY", 2)}
	return nil
}

// stopNode stops the current control plane and node, if any.
func (b *bench) stopNode() {
	if b.stop != nil {
		b.stop()
		b.stop = nil
	}
}

// proxiesAt are the proxies measured at the step of n Services, in the order named:
// BENCH_PROXIES_<n> where set, else BENCH_PROXIES. kube-proxy's IPVS mode reaches a
// steady state only at 1,000 Services in the emulated VM: at 5,000 its first sync was
// still filling its sets after 25 minutes (bench/results/scale-5000-both). So one run
// measures it at the small steps, where the idle-CPU target compares the two, and ours
// alone above. A name that is none of proxies' is an error.
func proxiesAt(n int) ([]benchkit.Proxy, error) {
	v := benchkit.Env("BENCH_PROXIES", "ipvs-proxier,kube-proxy")
	name := fmt.Sprintf("BENCH_PROXIES_%d", n)
	v = benchkit.Env(name, v)
	var out []benchkit.Proxy
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		i := slices.IndexFunc(proxies, func(p benchkit.Proxy) bool { return p.Name == f })
		if i < 0 {
			var names []string
			for _, p := range proxies {
				names = append(names, strconv.Quote(p.Name))
			}
			return nil, fmt.Errorf("BENCH_PROXIES (or %s): %q is none of %s", name, f, strings.Join(names, ", "))
		}
		out = append(out, proxies[i])
	}
	return out, nil
}
