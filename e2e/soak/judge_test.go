package main

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// TestSchedule: the rounds take every kind, random faults come on top, all within the
// fault span and in time order, and no SIGKILL lands in the growth window.
func TestSchedule(t *testing.T) {
	p := defaults(2*time.Hour, 5000).plan()
	got := p.schedule(1)
	kinds := map[string]bool{}
	random := 0
	for i, f := range got {
		kinds[f.Kind] = true
		if f.Random {
			random++
		}
		if f.At < p.From || f.At >= p.To || i > 0 && f.At < got[i-1].At {
			t.Errorf("fault %d at %v: outside [%v, %v) or out of order", i, f.At, p.From, p.To)
		}
		if f.Kind == faultDaemonKill && f.At >= p.KillBefore {
			t.Errorf("SIGKILL at %v, in the growth window (from %v)", f.At, p.KillBefore)
		}
	}
	if len(kinds) != len(faultKinds) || random == 0 {
		t.Errorf("kinds %v, %d random", kinds, random)
	}
	if !slices.Equal(got, p.schedule(1)) {
		t.Errorf("one seed, two schedules")
	}
	if short := defaults(5*time.Minute, 300).plan().schedule(1); len(short) < len(faultKinds)-1 {
		t.Errorf("a 5-minute run plans %d faults", len(short))
	}
	// The last SIGKILL leaves the restarted daemon a warm-up before the growth window,
	// and the short form still kills it once.
	for _, d := range []time.Duration{10 * time.Minute, 12 * time.Minute, 2 * time.Hour} {
		set := defaults(d, 500)
		p, kills := set.plan(), 0
		for _, f := range p.schedule(1) {
			if f.Kind != faultDaemonKill {
				continue
			}
			kills++
			if f.At > set.windowStart()-set.restartWarmUp() {
				t.Errorf("%v: SIGKILL at %v, within a warm-up (%v) of the growth window at %v", d, f.At, set.restartWarmUp(), set.windowStart())
			}
		}
		if kills == 0 {
			t.Errorf("%v: no SIGKILL planned", d)
		}
	}
}

// TestHistogramQuantile: histogram_quantile's interpolation, the +Inf bucket, and a
// minute's share across a process restart.
func TestHistogramQuantile(t *testing.T) {
	h := histogram{Bounds: []float64{1, 2, 4}, Counts: []uint64{10, 30, 40}, Total: 50}
	for _, c := range []struct{ q, want float64 }{{0.1, 0.5}, {0.5, 1.75}, {0.8, 4}, {0.99, 4}} {
		if got := h.quantile(c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%v = %v, want %v", c.q, got, c.want)
		}
	}
	prev := histogram{Bounds: h.Bounds, Counts: []uint64{10, 10, 10}, Total: 10}
	d := h.since(prev)
	if d.Total != 40 || !slices.Equal(d.Counts, []uint64{0, 20, 30}) {
		t.Errorf("since: %+v", d)
	}
	if r := prev.since(h); r.Total != prev.Total {
		t.Errorf("after a restart the share is the new process's: %+v", r)
	}
	if !math.IsNaN((histogram{}).quantile(0.5)) || counterSince(3, 10) != 3 || counterSince(10, 3) != 7 {
		t.Errorf("empty histogram or counter reset")
	}
}

// TestGrowth: a flat noisy series passes, one that grows 20 % an hour fails, the fit
// keeps to the window and the last process.
func TestGrowth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var flat, leak []sample
	for m := range 121 {
		noise := r.NormFloat64() * 2
		flat = append(flat, sample{Minute: float64(m), PID: 9, RSSMiB: 100 + noise})
		leak = append(leak, sample{Minute: float64(m), PID: 9, RSSMiB: 100 + 20*float64(m)/60 + noise})
	}
	rss := func(s sample) float64 { return s.RSSMiB }
	if f, n := growthFit(flat, 60, 120.5, rss, nil); !growthVerdict("RSS", "MiB", f, n).Pass || n != 61 {
		t.Errorf("flat: %+v over %d", f, n)
	}
	if f, n := growthFit(leak, 60, 120.5, rss, nil); growthVerdict("RSS", "MiB", f, n).Pass || math.Abs(f.Slope-20) > 2 {
		t.Errorf("leak passed: %+v", f)
	}
	leak[len(leak)-1].PID = 10
	if _, n := growthFit(leak, 60, 120.5, rss, nil); n != 1 {
		t.Errorf("fitted %d samples across a restart", n)
	}
	if _, n := growthFit(flat, 60, 120.5, rss, func(s sample) bool { return s.Minute == 70 }); n != 60 {
		t.Errorf("skipped nothing: %d samples", n)
	}
	if f := fitLine([]float64{0, 1, 2}, []float64{1, 3, 5}); f.Slope != 2 || f.SlopeErr != 0 || f.MeanY != 3 {
		t.Errorf("exact line: %+v", f)
	}
}

// TestGrowthBeyondListeners: goroutines and fds that rise with the daemon's listening
// sockets (healthCheckNodePorts the churn asked for) are no growth; the same rise with
// the listeners flat is.
func TestGrowthBeyondListeners(t *testing.T) {
	judge := func(listening func(m int) float64) map[string]bool {
		o := cleanOutcome()
		for m := range o.Samples {
			o.Samples[m].Goroutines += float64(m) // one more a minute
			o.Samples[m].OpenFDs += float64(m)
			o.Samples[m].Listening = listening(m)
		}
		pass := map[string]bool{}
		for _, v := range verdicts(o) {
			pass[v.Name] = v.Pass
		}
		return pass
	}
	names := []string{"no growth: goroutines beyond the listeners", "no growth: open fds beyond the listeners"}
	withListeners := judge(func(m int) float64 { return 3 + float64(m) })
	flat := judge(func(int) float64 { return 3 })
	for _, n := range names {
		if p, ok := withListeners[n]; !ok || !p {
			t.Errorf("%s: failed (or absent) when the listeners account for the rise", n)
		}
		if flat[n] {
			t.Errorf("%s: passed a rise the listeners do not account for", n)
		}
	}
}

// TestGrowthLeavesFaultsOut: a sample taken while the apiserver was down (the watches'
// goroutines gone) is no level to fit: the dip it makes at the window's start would
// read as growth.
func TestGrowthLeavesFaultsOut(t *testing.T) {
	o := cleanOutcome()
	o.Samples[10].Goroutines, o.Samples[11].Goroutines = 20, 20 // the window's first samples, under the fault
	pass := func(o outcome) bool {
		for _, v := range verdicts(o) {
			if v.Name == "no growth: goroutines beyond the listeners" {
				return v.Pass
			}
		}
		t.Fatal("no goroutines verdict")
		return false
	}
	if pass(o) {
		t.Fatal("the dip passed without a fault to explain it: the test shows nothing")
	}
	at := o.Started.Add(10 * time.Minute)
	o.Faults = append(o.Faults, faultRecord{Kind: faultRelist, Start: at.Add(-10 * time.Second), End: at, Recovery: 55 * time.Second, Bound: boundRestart})
	if !pass(o) {
		t.Error("a sample under a relist counted as the daemon's level")
	}
}

// TestVerdicts: a clean outcome passes every verdict; a failed request outside every
// fault's window, a fault not recovered, an unplanned restart and an affinity break
// each fail their own.
func TestVerdicts(t *testing.T) {
	o := cleanOutcome()
	for _, v := range verdicts(o) {
		if !v.Pass {
			t.Errorf("clean outcome: %s fails: %s", v.Name, v.Detail)
		}
	}
	bad := cleanOutcome()
	start := bad.Faults[0].Start
	bad.Loops[0].ByWindow = byWindow([]time.Time{start.Add(-time.Hour), start.Add(2 * time.Second)}, bad.Faults)
	bad.Faults = append(bad.Faults, faultRecord{Kind: faultAPIRestart, Recovery: -1, Bound: time.Minute})
	bad.Samples[5].PID = 77
	bad.Loops[1].Switches = 1
	bad.Compare.OnlyNode = []string{"vs TCP 10.96.0.9:80 rr"}
	failed := map[string]bool{}
	for _, v := range verdicts(bad) {
		failed[v.Name] = !v.Pass
	}
	for _, name := range []string{"zero failed requests on the untouched Services", "every fault recovered within its bound",
		"the daemon never restarted on its own", "session affinity held", "the kernel equals the cluster"} {
		if !failed[name] {
			t.Errorf("%s passed", name)
		}
	}
	if w := bad.Loops[0].ByWindow; w[""] != 1 || w[faultDaemonKill] != 1 {
		t.Errorf("failures by window: %v", w)
	}
	// No window is documented: a failure during a fault fails the verdict too.
	during := cleanOutcome()
	during.Loops[0].ByWindow = byWindow([]time.Time{start.Add(2 * time.Second)}, during.Faults)
	for _, v := range verdicts(during) {
		if v.Name == "zero failed requests on the untouched Services" && v.Pass {
			t.Errorf("a failure in a fault's window passed: %s", v.Detail)
		}
	}
}

// TestShortGrowth: a window under shortWindow judges the heap in use on its growth
// over the window, not the RSS's slope an hour. The 10-minute form's window (a daemon
// restarted 4 minutes before it: its RSS still climbing from 35.2 to 40.7 MiB, +65 MiB/h as fitted,
// its heap in use flat near 8 MiB) passes; the same window with the heap growing 2 MiB a
// minute more fails; a 2-hour run's window still fits the RSS a slope an hour, where
// that climb fails.
func TestShortGrowth(t *testing.T) {
	rssClimb := []float64{35.24, 36.8, 38.09, 38.45, 40.33, 40.69}
	heap := []float64{7.74, 8, 7.41, 8.09, 7.55, 8.25}
	growthOf := func(o outcome) verdict {
		for _, v := range verdicts(o) {
			if strings.HasPrefix(v.Name, "no growth: ") && !strings.Contains(v.Name, "beyond") && !strings.Contains(v.Name, "netlink") {
				return v
			}
		}
		t.Fatal("no memory verdict")
		return verdict{}
	}
	short := func(extra float64) outcome {
		o := cleanOutcome()
		o.Set = defaults(10*time.Minute, 500)
		o.Samples, o.Faults = nil, nil
		for m := range 11 {
			s := sample{Minute: float64(m), PID: 5, RSSMiB: 33, HeapInuseMiB: 8}
			if m >= 5 {
				s.RSSMiB, s.HeapInuseMiB = rssClimb[m-5], heap[m-5]+extra*float64(m-5)
			}
			o.Samples = append(o.Samples, s)
		}
		return o
	}
	if v := growthOf(short(0)); !v.Pass || v.Name != "no growth: heap in use" {
		t.Errorf("the short form's window failed: %s: %s", v.Name, v.Detail)
	}
	if v := growthOf(short(2)); v.Pass {
		t.Errorf("the heap growing 10 MiB over 5 minutes passed: %s", v.Detail)
	}
	long := cleanOutcome()
	long.Set = defaults(2*time.Hour, 5000)
	long.Samples, long.Faults = nil, nil
	for m := range 121 {
		long.Samples = append(long.Samples, sample{Minute: float64(m), PID: 5, RSSMiB: 35 + 64*float64(m)/60, HeapInuseMiB: 8})
	}
	if v := growthOf(long); v.Pass || v.Name != "no growth: RSS" {
		t.Errorf("a 2-hour window's RSS growing 64 MiB/h passed: %s: %s", v.Name, v.Detail)
	}
}

// cleanOutcome is a 20-minute run where everything held.
func cleanOutcome() outcome {
	set := defaults(20*time.Minute, 500)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := outcome{Set: set, Machine: "test", Started: start, Finished: start.Add(20 * time.Minute), Applied: 2400, Kinds: map[string]int{opEndpointAdd: 2400}}
	for m := range 21 {
		o.Samples = append(o.Samples, sample{Minute: float64(m), PID: 5, RSSMiB: 60 + float64(m%3), HeapInuseMiB: 30, Goroutines: 80, OpenFDs: 20,
			NetlinkSockets: 6, SyncP99Ms: 20, ChangeP99Ms: 900, ProbeMs: 700, Changes: 120, DaemonChanges: 130, Events: 2, RequestsOK: float64(m * 3000)})
	}
	o.Samples[3].PID, o.Samples[3].Faults = 5, faultDaemonKill
	o.Faults = []faultRecord{{Kind: faultDaemonKill, At: 3 * time.Minute, Start: start.Add(3 * time.Minute), End: start.Add(3*time.Minute + time.Second),
		Recovery: 20 * time.Second, Bound: boundRestart}}
	o.Loops = []loopResult{{Name: "ClusterIP", Proto: "tcp", OK: 9000, ByWindow: map[string]int{}}, {Name: "ClientIP affinity", Proto: "tcp", OK: 9000, ByWindow: map[string]int{}}}
	o.Compare = compareResult{Attempts: 1, Lines: 4000}
	o.Drain = drainResult{Longest: 2 * time.Minute, Scans: 10}
	return o
}

// TestWriteResults: the folder gets the CSV (a row a sample), the chart and the page
// with every verdict and fault.
func TestWriteResults(t *testing.T) {
	dir := t.TempDir()
	o := cleanOutcome()
	o.Samples[4].RSSMiB = math.NaN() // not measured: an empty cell, no point
	// The changes a minute span a log axis (1 at the start, 120 after) and end at 0, as
	// the sample taken after the churn stops does: the chart leaves the zero out.
	o.Samples[0].Changes, o.Samples[len(o.Samples)-1].Changes = 1, 0
	vs, err := writeResults(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"| Reproduce | `SOAK_DURATION=20m0s SOAK_SERVICES=500", "| 3.0 | daemon-sigkill | 20s |"}
	for _, v := range vs {
		want = append(want, "| "+v.Name+" | pass |")
	}
	benchkit.CheckReport(t, dir, reportFile, want, csvFile, len(o.Samples)+1, chartFile)
	rows, err := benchkit.ReadCSV([]string{dir + "/" + csvFile})
	if err != nil || rows[4]["rss_mib"] != "" || rows[3]["faults"] != faultDaemonKill || rows[0]["goroutines"] != "80" {
		t.Errorf("CSV rows: %v %v", err, rows[:5])
	}
	if os.Getenv("SOAK_KEEP_CHART") != "" {
		b, _ := os.ReadFile(dir + "/" + chartFile)
		_ = os.WriteFile(os.Getenv("SOAK_KEEP_CHART"), b, 0o644)
	}
}

// TestStateLinesPlanAgainstSaved: plan's sets and rules for examples/cluster.yaml, and
// what `ipset save` and `iptables-save` printed after they were restored into a fresh
// network namespace (testdata), read as the same lines; one rule changed is a difference.
func TestStateLinesPlanAgainstSaved(t *testing.T) {
	plan, _ := os.ReadFile("testdata/plan-rules.txt")
	saved, _ := os.ReadFile("testdata/saved-rules.txt")
	a, b := stateLines(string(plan)), stateLines(string(saved))
	if onlyA, onlyB := diffLines(a, b); len(onlyA)+len(onlyB) > 0 || len(a) < 150 {
		t.Errorf("%d lines; only in plan:\n%s\nonly saved:\n%s", len(a), strings.Join(onlyA, "\n"), strings.Join(onlyB, "\n"))
	}
	changed := strings.Replace(string(saved), "--random-fully", "", 1)
	if onlyA, onlyB := diffLines(a, stateLines(changed)); len(onlyA) != 1 || len(onlyB) != 1 {
		t.Errorf("a changed rule: %v %v", onlyA, onlyB)
	}
}

// TestStateLinesIPVS: virtual servers with their flags, real servers with weight but no
// counters, none at weight 0, and the addresses.
func TestStateLinesIPVS(t *testing.T) {
	node := `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.10:80 rr persistent 10800
  -> 10.244.0.5:8080              Masq    1      3          7
  -> 10.244.0.6:8080              Masq    0      1          0
UDP  10.96.1.2:53 rr
# addresses on kube-ipvs0
6: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN
    inet 10.96.0.10/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
`
	want := []string{"addr 10.96.0.10/32", "rs TCP 10.96.0.10:80 -> 10.244.0.5:8080 Masq 1", "vs TCP 10.96.0.10:80 rr persistent 10800", "vs UDP 10.96.1.2:53 rr"}
	if got := stateLines(node); !slices.Equal(got, want) {
		t.Errorf("got\n%s", strings.Join(got, "\n"))
	}
	if got := zeroWeight(node); !slices.Equal(got, []string{"TCP 10.96.0.10:80 -> 10.244.0.6:8080"}) {
		t.Errorf("weight 0: %v", got)
	}
}

// TestCanonRule: the forms libxt_ipvs and iptables-save print for plan's output filter.
func TestCanonRule(t *testing.T) {
	in := strings.Fields("-s 192.0.2.10 -m ipvs --vaddr 192.0.2.10 --vproto tcp --vport 443 -j DROP")
	want := "-s 192.0.2.10/32 -m ipvs --vaddr 192.0.2.10 --vproto 6 --vport 443 -j DROP"
	if got := canonRule("IPv4", in); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := canonRule("IPv6", strings.Fields("-m mark --mark 0x00004000/0x00004000 -j REJECT")); got != "-m mark --mark 0x4000/0x4000 -j REJECT --reject-with icmp6-port-unreachable" {
		t.Errorf("got %s", got)
	}
}

// TestStateLinesJumpsAndFrontOptions: what the node's iptables-save held after a soak
// and plan printed for the same rules: the jumps from built-in chains in reverse order
// (the daemon inserts each at the top), a negated source printed first.
func TestStateLinesJumpsAndFrontOptions(t *testing.T) {
	plan := `# IPv4 iptables-save
*filter
-A INPUT -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT
-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER
COMMIT
*nat
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
COMMIT`
	node := `# IPv4 iptables-save
*filter
:INPUT ACCEPT [0:0]
-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER
-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT
COMMIT
*nat
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ
COMMIT`
	if a, b := diffLines(stateLines(plan), stateLines(node)); len(a)+len(b) > 0 {
		t.Errorf("only plan:\n%s\nonly node:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	swapped := strings.Replace(node, "-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN\n", "", 1) + "\n-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN"
	if a, b := diffLines(stateLines(plan), stateLines(swapped)); len(a) == 0 || len(b) == 0 {
		t.Errorf("the order of a chain of ours is not compared")
	}
}

// TestNodeIPs: global addresses but kube-ipvs0's and link-local ones.
func TestNodeIPs(t *testing.T) {
	out := `2: eth0    inet 10.0.2.15/24 brd 10.0.2.255 scope global eth0\       valid_lft forever preferred_lft forever
5: h-pod1    inet 169.254.1.1/32 scope global h-pod1\       valid_lft forever preferred_lft forever
6: kube-ipvs0    inet 10.96.0.1/32 scope global kube-ipvs0\       valid_lft forever preferred_lft forever
7: soak0    inet 192.168.77.1/32 scope global soak0\       valid_lft forever preferred_lft forever
8: h-client    inet 192.168.50.1/24 scope global h-client\       valid_lft forever preferred_lft forever`
	if got := nodeIPs(out); !slices.Equal(got, []string{"10.0.2.15", "192.168.50.1", "192.168.77.1"}) {
		t.Errorf("got %v", got)
	}
	args := planArgs([]string{"/usr/local/bin/ipvs-proxier", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"}, "/tmp/c", []string{"10.0.2.15", "192.168.77.1"})
	if strings.Join(args, " ") != "--config=/tmp/c --hostname-override=soak-node --node-ip 10.0.2.15,192.168.77.1" {
		t.Errorf("plan args %v", args)
	}
}

// TestDrainWatch: the longest unbroken stay at weight 0; one that left and came back
// starts again.
func TestDrainWatch(t *testing.T) {
	var d drainWatch
	t0 := time.Now()
	d.observe(t0, []string{"a", "b"})
	d.observe(t0.Add(5*time.Minute), []string{"a"})
	d.observe(t0.Add(10*time.Minute), []string{"a", "b"})
	d.observe(t0.Add(15*time.Minute), []string{"b"})
	if d.longest != 10*time.Minute || d.which != "a" {
		t.Errorf("longest %v %s", d.longest, d.which)
	}
}

// TestRotationSyncs: the bound of a real server's repair follows the daemon's rotation
// period (CheckEvery doubled until a full sync reads at most 500), plus the one under way.
func TestRotationSyncs(t *testing.T) {
	for n, want := range map[float64]int{1500: 11, 5000: 11, 5001: 21, 12000: 41, math.NaN(): 321, 0: 321} {
		if got := rotationSyncs(n); got != want {
			t.Errorf("rotationSyncs(%v) = %d, want %d", n, got, want)
		}
	}
	// A failed scrape between two reads keeps the bound the reads gave.
	var c maxCount
	for _, n := range []float64{12000, math.NaN(), 11000} {
		c.read(n)
	}
	if got := rotationSyncs(c.most); got != 41 {
		t.Errorf("after 12,000, a failed scrape and 11,000: bound %d, want 41", got)
	}
}

// TestUnplannedRestarts: a PID that changes in the sample after the one a SIGKILL began
// in is the planned restart (the 2-hour soak's minutes 10 and 11); a change with no kill
// in that minute or the one before is not.
func TestUnplannedRestarts(t *testing.T) {
	ss := []sample{
		{Minute: 9, PID: 170}, {Minute: 10, PID: 170, Faults: faultDaemonKill}, {Minute: 11, PID: 555},
		{Minute: 12, PID: 555}, {Minute: 13, PID: 600},
	}
	if got := unplannedRestarts(ss); len(got) != 1 || got[0] != "13.0" {
		t.Errorf("unplanned restarts %v, want [13.0]", got)
	}
}
