package main

import (
	"context"
	"encoding/json"
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

// proxies are the proxies under test, started and stopped in the node VM: ours, and what
// users of kube-proxy's IPVS mode choose between (its nftables mode, kube-router).
var proxies = []benchkit.Proxy{benchkit.IPVSProxier, benchkit.IPVSProxierNftables, benchkit.IPVSProxierRoutes, benchkit.KubeProxy("ipvs"),
	benchkit.KubeProxy("nftables"), benchkit.KubeRouter}

// result is one row: one proxy at one scale.
type result struct {
	Services, Endpoints int
	Proxy               string
	// ColdStart is the start to every ClusterIP port programmed (dataPath); 0 when it
	// did not finish.
	ColdStart time.Duration
	// Critical is when ours had programmed the apiserver's Service (and the cluster DNS
	// Service where there is one) ahead of the rest, from its log; 0 for kube-proxy.
	Critical           time.Duration
	SetsDone           time.Duration // and its ClusterIP set complete; 0 when it did not finish
	P50, P99           time.Duration
	Changes            int
	PeakRSS, SteadyRSS float64 // MiB
	CPUIdle, CPUChurn  float64 // CPU seconds per minute
	VS, RS, SetEntries int     // Service ports and their backends (IPVS: virtual and real servers)
	// ClusterPorts is how many of the step's ClusterIP ports were programmed when the
	// cold start ended or the budget ran out.
	ClusterPorts int
	// Probed and Answered: the sampled Services requested at the cold start, and those
	// that answered (probe.go).
	Probed, Answered int
	Notes            []string
}

type bench struct {
	node   *harness.Node
	stop   func() // stops node and its control plane
	w      *benchkit.Workload
	budget time.Duration
	// profiles, when set, is a directory for CPU and heap profiles of ipvs-proxier
	// (started with enableProfiling in its config.conf), taken after the idle measurement.
	profiles string
	// daemonLogs, when set, is a directory for ipvs-proxier's debug log at each step.
	daemonLogs string
	// changes is how many latency samples to take per proxy and step.
	changes int
	// extra are Services the latency phase added and has yet to delete.
	extra []extraSvc
	// probeMade: the node has the probe's client and endpoints' pod.
	probeMade bool
}

// wipe stops both proxies and removes everything either made: a fresh node.
func (b *bench) wipe() error { return benchkit.Wipe(b.node) }

// counts reads what p's data path holds; the ClusterIP ports apart, since they decide
// when a proxy is done.
func (b *bench) counts(p benchkit.Proxy) (portCounts, error) {
	return dataPathOf(p).counts(b.node)
}

func (b *bench) setEntries(p benchkit.Proxy) int {
	out, _ := b.node.MustExec(p.SetMembers(""))
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// proc reads a process's resident memory (now and peak, MiB) and CPU time.
func (b *bench) proc(p benchkit.Proxy) (rss, peak float64, cpu time.Duration, err error) {
	return benchkit.Proc(b.node, p)
}

// run measures one proxy at the current scale.
func (b *bench) run(ctx context.Context, p benchkit.Proxy, n int) result {
	m := &measurement{b: b, p: p, n: n, r: &result{Services: n, Endpoints: b.w.Endpoints, Proxy: p.Name}}
	if err := b.wipe(); err != nil {
		m.note("wipe: %v", err)
		return *m.r
	}
	m.deadline = time.Now().Add(b.budget)
	if !m.coldStart() {
		return b.finish(p, *m.r)
	}
	time.Sleep(10 * time.Second) // let the first full sync and its follow-ups settle
	if m.p.Ours() {
		m.full0 = m.firstFullSync()
	}
	m.settle()
	m.idle()
	m.changeLatency(ctx)
	m.saveDaemonLog()
	m.churnCPU(ctx)
	m.transactions()
	return b.finish(p, *m.r)
}

// measurement is one proxy's run at one size: what it has measured so far and the
// budget's deadline.
type measurement struct {
	b        *bench
	p        benchkit.Proxy
	n        int
	r        *result
	deadline time.Time
	// full0 is ours' full-sync histogram (sum, count) before the idle measurement.
	full0 [2]float64
}

// firstFullSync waits (within the budget) until ours has recorded its first full sync
// and returns the histogram then: the cold start ends when the virtual servers are
// programmed, and at 30,000 Services the first sync was still binding addresses, so
// the mean "periodic" full sync included it (`make bench-scale`).
func (m *measurement) firstFullSync() [2]float64 {
	for {
		sum, count, ok := m.fullSyncs()
		if (ok && count >= 1) || time.Now().After(m.deadline) {
			return [2]float64{sum, count}
		}
		time.Sleep(2 * time.Second)
	}
}

// gcCycles reads the proxy's count of garbage collections from its /metrics (ours and
// kube-proxy serve the Go collector's go_gc_duration_seconds there); -1 when unread or
// it serves no metrics (kube-router here).
func (m *measurement) gcCycles() int {
	if m.p.Metrics == "" {
		return -1
	}
	out, err := m.b.node.MustExec("wget -qO- " + m.p.Metrics + " | grep '^go_gc_duration_seconds_count'")
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// memoryNote notes where ours' steady RSS is, from the Go runtime's own accounting: the
// live objects, the heap spans holding them (in use minus allocated is fragmentation:
// spans that a few live objects keep from being freed), the free spans not yet given
// back to the kernel, and the next collection's goal.
func (m *measurement) memoryNote() {
	out, err := m.b.node.MustExec("wget -qO- http://127.0.0.1:10249/metrics | grep '^go_memstats_'")
	if err != nil {
		m.note("memory: %v", err)
		return
	}
	if s := memstatsNote(out); s != "" {
		m.note("steady memory (MiB): %s", s)
	}
	status, err := m.b.node.MustExec("grep -E '^Rss(Anon|File|Shmem):' /proc/$(cat " + m.p.PIDFile + ")/status")
	if s := rssSplitNote(status); err == nil && s != "" {
		m.note("steady RSS (MiB): %s", s)
	}
}

// rssSplitNote summarizes /proc/PID/status's RssAnon, RssFile and RssShmem lines (kB):
// the anonymous pages (the heap, stacks, the runtime's structures) against the pages of
// files mapped in (the binary's code and read-only data: "shared" when the file is in
// memory (a tmpfs, the bench VM's initramfs), else "files"); "" if one is missing.
func rssSplitNote(status string) string {
	kb := map[string]float64{}
	for _, l := range strings.Split(status, "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == "kB" {
			if n, err := strconv.ParseFloat(f[1], 64); err == nil {
				kb[strings.TrimSuffix(f[0], ":")] = n / 1024
			}
		}
	}
	for _, k := range []string{"RssAnon", "RssFile", "RssShmem"} {
		if _, ok := kb[k]; !ok {
			return ""
		}
	}
	return fmt.Sprintf("anonymous %.0f, files %.0f, shared %.0f", kb["RssAnon"], kb["RssFile"], kb["RssShmem"])
}

// memstatsNote summarizes the go_memstats_* lines of a scrape, "" if they are missing.
func memstatsNote(metrics string) string {
	v := map[string]float64{}
	for _, l := range strings.Split(metrics, "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			n, err := strconv.ParseFloat(f[1], 64)
			if err == nil {
				v[strings.TrimPrefix(f[0], "go_memstats_")] = n / (1 << 20)
			}
		}
	}
	for _, k := range []string{"heap_alloc_bytes", "heap_inuse_bytes", "heap_idle_bytes", "heap_released_bytes", "next_gc_bytes", "stack_inuse_bytes", "sys_bytes"} {
		if _, ok := v[k]; !ok {
			return ""
		}
	}
	return fmt.Sprintf("heap allocated %.0f in spans of %.0f, free spans kept %.0f (released %.0f), next GC at %.0f, stacks %.0f, runtime total %.0f",
		v["heap_alloc_bytes"], v["heap_inuse_bytes"], v["heap_idle_bytes"]-v["heap_released_bytes"], v["heap_released_bytes"],
		v["next_gc_bytes"], v["stack_inuse_bytes"], v["sys_bytes"])
}

// fullSyncs reads ours' full-sync duration histogram: the sum of the durations and the
// count. One family's series: each sync is recorded under both (ip_family).
func (m *measurement) fullSyncs() (sum, count float64, ok bool) {
	out, err := m.b.node.MustExec("wget -qO- http://127.0.0.1:10249/metrics | grep '^kubeproxy_sync_full_proxy_rules_duration_seconds_[sc]' | grep 'ip_family=\"IPv4\"'")
	if err != nil {
		return 0, 0, false
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		name, _, _ := strings.Cut(f[0], "{")
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case strings.HasSuffix(name, "_sum"):
			sum = v
		case strings.HasSuffix(name, "_count"):
			count, ok = v, true
		}
	}
	return sum, count, ok
}

// note records a note on the result and logs it.
func (m *measurement) note(format string, args ...any) {
	m.r.Notes = append(m.r.Notes, fmt.Sprintf(format, args...))
	benchkit.Logf("%s @ %d: "+format, append([]any{m.p.Name, m.n}, args...)...)
}

// firstSyncLog is what ours says of its first sync: a look at the IPVS table takes tens
// of seconds at 30,000 Services (46 s in `make bench-scale`), so the cold start the
// bench sees can lag the daemon's own by minutes; the daemon logs when its first sync
// had programmed everything (sinceStart) and each phase's seconds.
func (m *measurement) firstSyncLog() string {
	out, err := m.b.node.MustExec(`grep '"Node programmed (first sync)"' /tmp/daemon.log | tail -1`)
	if err != nil {
		return "first sync, daemon's log: " + err.Error()
	}
	var l map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &l); err != nil {
		return "first sync, daemon's log: not logged yet (the virtual servers are written before the addresses)"
	}
	since, _ := l["sinceStart"].(float64)
	var b strings.Builder
	fmt.Fprintf(&b, "first sync, daemon's log: everything programmed %.1f s after start", since)
	for _, k := range []string{"translate", "critical", "sets", "ipvs", "addresses", "iptables"} {
		if v, ok := l[k].(float64); ok {
			fmt.Fprintf(&b, ", %s %.1f s", k, v)
		}
	}
	return b.String()
}

// pollPause is how long the cold start waits after a look at the kernel that took took:
// a second, or three times the look, so looking takes at most a quarter of the time.
// `ipvsadm -Ln` dumps every virtual server (the kernel's walk is quadratic) and then
// each one's real servers, under the IPVS mutex the proxy's own writes need, on the
// VM's two vCPUs the proxy runs on; one look took up to 31 s at 5,000 Services × 50 and
// 46 s at 30,000; with a look every second ours' IPVS writes took 94 s at
// 30,000, with this pause 35 s (on a fresher VM: the two runs differ in that too). A
// proxy that finishes between two looks is seen at most one pause and one look late.
func pollPause(took time.Duration) time.Duration { return max(time.Second, 3*took) }

// waitLook sleeps d, or less when the proxy reports its first complete sync meanwhile
// (synced: already reported), so that the next look at the kernel follows it within a
// second: with the paced looks alone, a look taking 31 s at 30,000 Services and the
// pause after it 93 s, a proxy programmed 96 s after its start was reported at 185 s.
// It returns whether the first complete sync has been reported.
func (m *measurement) waitLook(d time.Duration, synced bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		if !synced && m.syncsDone() >= 1 {
			return true
		}
	}
	return synced
}

// syncsDone reads how many complete syncs the proxy reports on /metrics: ours its full
// syncs (a partial one programs only what changed), kube-proxy's IPVS mode every sync
// (each is a full one; its nftables mode's first is); the largest count of its IP
// families' series, -1 unread or for a proxy without metrics (kube-router).
func (m *measurement) syncsDone() int {
	if m.p.Metrics == "" {
		return -1
	}
	metric := "kubeproxy_sync_proxy_rules_duration_seconds_count"
	if m.p.Ours() {
		metric = "kubeproxy_sync_full_proxy_rules_duration_seconds_count"
	}
	out, err := m.b.node.MustExec("wget -qO- " + m.p.Metrics + " | grep '^" + metric + "' || true")
	if err != nil {
		return -1
	}
	return maxCount(out)
}

// maxCount is the largest value of the Prometheus text lines in out, -1 if none.
func maxCount(out string) int {
	n := -1
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				n = max(n, int(v))
			}
		}
	}
	return n
}

// coldStart starts the proxy and measures the time from process start to every ClusterIP
// port of the workload programmed in its data path (dataPath: each with all its
// endpoints; the apiserver's own Service has none here), probes a sample of them
// (probe.go), then waits for its ClusterIP set to be complete (p.ClusterSet). False: it
// did not finish within the budget (or did not start), and the run ends.
func (m *measurement) coldStart() bool {
	start := time.Now()
	cmd := m.p.Start
	if m.b.profiles != "" && m.p.Ours() {
		// enableProfiling in a copy of the DaemonSet's config.conf: beside --config the
		// --profiling flag is ignored, as kube-proxy ignores it; the later --config wins.
		cmd = "grep -v '^enableProfiling:' /var/lib/kube-proxy/config.conf > /tmp/profiling.conf && " +
			"echo 'enableProfiling: true' >> /tmp/profiling.conf && " + cmd + " --config=/tmp/profiling.conf"
	}
	if m.b.daemonLogs != "" && m.p.Ours() {
		cmd += " --log-level=debug"
	}
	if _, err := m.b.node.MustExec(cmd); err != nil {
		m.note("start: %v", err)
		return false
	}
	coldProfile := make(chan error, 1)
	if m.b.profiles != "" && m.p.Ours() {
		go func() { // the first 60 s of the cold start
			// The metrics port opens after the preflight, later on a larger node: retry
			// a refused fetch for 30 s.
			var err error
			for try := 0; try < 30; try++ {
				time.Sleep(time.Second)
				began := time.Now()
				err = m.b.profile(m.b.profiles, stepFile(m.p, "cpu-cold", m.n, "pprof"), "profile?seconds=60")
				if err == nil || time.Since(began) > 5*time.Second { // done, or failed past the connect
					break
				}
			}
			coldProfile <- err
		}()
	} else {
		coldProfile <- nil
	}
	dp := dataPathOf(m.p)
	looks, longest, synced := 0, time.Duration(0), false
	for {
		polled, after := time.Now(), synced
		c, err := m.b.counts(m.p)
		looks, longest = looks+1, max(longest, time.Since(polled))
		m.r.ClusterPorts = c.ClusterPorts
		if err == nil && c.complete(m.n, m.b.w.Endpoints) {
			m.r.ColdStart = time.Since(start)
			how := "at the end of the look that saw it"
			if after { // the proxy had finished before this look began
				m.r.ColdStart, how = polled.Sub(start), "at the start of the look that followed the proxy's first complete sync"
			}
			m.note("cold start: %d looks at %s, the longest %.1f s; taken %s", looks, dp.describe(), longest.Seconds(), how)
			if m.p.Ours() {
				m.note("%s", m.firstSyncLog())
				m.r.Critical = m.criticalLog()
			}
			m.probeAtReady()
			break
		}
		if time.Now().After(m.deadline) {
			m.note("cold start unfinished after %v: %s held %d of %d ClusterIP ports with endpoints (%d of %d endpoints; %d ports, %d backends in all)%s",
				m.b.budget.Round(time.Second), dp.describe(), c.ClusterPorts, m.n, c.ClusterBackends, m.n*m.b.w.Endpoints, c.Ports, c.Backends, errNote(err))
			return false
		}
		synced = m.waitLook(pollPause(time.Since(polled)), synced)
	}
	// The sets decide what the rules let through: a proxy is ready when its ClusterIP
	// set (KUBE-CLUSTER-IP, kube-router-svip-prt, kube-proxy's nftables cluster-ips)
	// has every workload ClusterIP too (kube-proxy's IPVS mode execs ipset once per
	// entry on its first sync).
	for {
		out, _ := m.b.node.MustExec(m.p.SetMembers(m.p.ClusterSet))
		if k, _ := strconv.Atoi(strings.TrimSpace(out)); k >= m.n {
			m.r.SetsDone = time.Since(start)
			break
		}
		if time.Now().After(m.deadline) {
			m.note("%s incomplete after %v (%s of %d entries)", m.p.ClusterSet, m.b.budget.Round(time.Second), strings.TrimSpace(out), m.n)
			return false
		}
		time.Sleep(2 * time.Second)
	}
	benchkit.Logf("%s @ %d: cold start %v", m.p.Name, m.n, m.r.ColdStart.Round(100*time.Millisecond))
	if err := <-coldProfile; err != nil {
		m.note("cold-start profile: %v", err)
	}
	return true
}

// settleReserve is the part of the budget that settle leaves to the idle windows, the
// changes and the churn.
const settleReserve = 4 * time.Minute

// settle waits, within the budget less settleReserve, until the proxy's set entries
// stop growing (the same count 15 s apart), so that the idle windows measure a steady
// state: at 1,000 Services kube-proxy's first sync was still filling its other sets
// (one ipset exec per entry) for the rest of a 12-minute budget after KUBE-CLUSTER-IP
// was complete, and its "idle" windows were that sync (65.6 s/min, 29 s of each 30 in
// ipset, in `make bench-scale`). It notes how long it waited, or that the
// sets were still growing when it gave up.
func (m *measurement) settle() {
	start, prev := time.Now(), m.b.setEntries(m.p)
	for {
		time.Sleep(15 * time.Second)
		n := m.b.setEntries(m.p)
		if n == prev {
			if waited := time.Since(start); waited > 20*time.Second {
				m.note("sets settled at %d entries after another %v", n, waited.Round(time.Second))
			}
			return
		}
		if time.Now().Add(settleReserve).After(m.deadline) {
			m.note("sets still growing (%d entries) after another %v: the idle windows include its first sync", n, time.Since(start).Round(time.Second))
			return
		}
		prev = n
	}
}

// idleWindows is how many syncPeriods (30 s) the idle CPU is measured over. One window
// alone moved by a third from run to run at 30,000 (6.04 and 6.78 s/min in two runs,
// while a CPU profile of the 40 s after it held 1.8 s/min): a garbage collection of a
// heap of several hundred MiB falls in some windows and not others, so each window is
// noted apart, with its garbage collections.
const idleWindows = 3

// idle measures the idle CPU over idleWindows syncPeriods (30 s each, the periodic full
// sync included), then the steady memory and the kernel objects as programmed, and takes
// the profiles when asked.
func (m *measurement) idle() {
	first, err := benchkit.ProcCPU(m.b.node, m.p)
	if err == nil {
		prev, gc0 := first, m.gcCycles()
		var parts []string
		for w := 0; w < idleWindows; w++ {
			time.Sleep(30 * time.Second)
			c, err := benchkit.ProcCPU(m.b.node, m.p)
			if err != nil {
				break
			}
			gc, part := m.gcCycles(), c.Sub(prev).String()
			if gc >= 0 && gc0 >= 0 {
				part += fmt.Sprintf(", %d GCs", gc-gc0)
			}
			parts = append(parts, part)
			prev, gc0 = c, gc
		}
		if len(parts) > 0 {
			m.r.CPUIdle = prev.Sub(first).Total().Seconds() * 2 / float64(len(parts))
			m.note("idle CPU by 30 s window: %s", strings.Join(parts, "; "))
		}
		m.r.SteadyRSS, _, _, _ = m.b.proc(m.p)
		if m.p.Ours() {
			m.memoryNote()
		}
	}
	if c, err := m.b.counts(m.p); err == nil {
		m.r.VS, m.r.RS = c.Ports, c.Backends
		if m.p.Name == benchkit.KubeRouter.Name {
			m.note("its Service ports count a NodePort virtual server on every address of the node (--nodeport-bindon-all-ip, in harness.KubeRouterCommand), so more than the others' for the same Services")
		}
	}
	m.r.SetEntries = m.b.setEntries(m.p)
	if m.b.profiles != "" && m.p.Ours() {
		// 40 s covers one periodic full sync (syncPeriod 30 s).
		for _, pr := range [][2]string{{"cpu", "profile?seconds=40"}, {"heap", "heap"}, {"allocs", "allocs"}} {
			if err := m.b.profile(m.b.profiles, stepFile(m.p, pr[0], m.n, "pprof"), pr[1]); err != nil {
				m.note("profile %s: %v", pr[0], err)
			}
		}
	}
}

// changeLatency measures the change latency (endpoint added, endpoint removed, Service
// added, Service deleted) and reads the mean full sync ours reports.
func (m *measurement) changeLatency(ctx context.Context) {
	var lat []time.Duration
	for k := 0; k < m.b.changes && time.Now().Before(m.deadline); k++ {
		d, api, err := m.b.change(ctx, m.p, k, m.deadline)
		if err != nil {
			m.note("change %d: %v", k, err)
			break
		}
		lat = append(lat, d)
		benchkit.Logf("%s @ %d: change %d (%s) seen %s UTC, %d ms after it was made (its API writes took %d ms of it)", m.p.Name, m.n, k, changeKinds[k%4],
			time.Now().UTC().Format("15:04:05.000"), d.Milliseconds(), api.Milliseconds())
	}
	// Full-sync time as the proxy reports it (ours: the full-sync histogram), the
	// periodic ones apart from those before the idle measurement (the first sync).
	if m.p.Ours() {
		if sum, count, ok := m.fullSyncs(); ok && count > m.full0[1] {
			m.note("mean periodic full sync %.2f s over %.0f (in the VM; the syncs before them, the first included: %.1f s over %.0f)",
				(sum-m.full0[0])/(count-m.full0[1]), count-m.full0[1], m.full0[0], m.full0[1])
		}
	}
	m.r.Changes = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		m.r.P50, m.r.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	if m.r.Changes < m.b.changes {
		m.note("%d of %d changes measured within the budget", m.r.Changes, m.b.changes)
	}
}

// churnCPU measures the CPU under churn: 10 endpoint changes per second for 30 s.
func (m *measurement) churnCPU(ctx context.Context) {
	if time.Now().Before(m.deadline) {
		_, _, c0, err := m.b.proc(m.p)
		if err == nil {
			churnCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			tick := time.NewTicker(100 * time.Millisecond)
			for i := 0; churnCtx.Err() == nil; i++ {
				<-tick.C
				svc := (i * 2) % m.n // ClusterIP ones
				_ = m.b.w.SetEndpoints(churnCtx, benchkit.SvcName(svc), svc, m.b.w.Endpoints+1-(i/(m.n/2+1))%2)
			}
			tick.Stop()
			cancel()
			_, _, c1, _ := m.b.proc(m.p)
			m.r.CPUChurn = (c1 - c0).Seconds() * 2
		}
		// put every churned slice back to its normal size
		for i := 0; i < min(600, m.n); i += 2 {
			_ = m.b.w.SetEndpoints(ctx, benchkit.SvcName(i), i, m.b.w.Endpoints)
		}
	} else {
		m.note("no churn CPU: budget spent")
	}
}

// finish reads the peak memory (and, for a proxy that never finished starting, what it
// programmed so far) and stops the proxy.
func (b *bench) finish(p benchkit.Proxy, r result) result {
	if _, peak, _, err := b.proc(p); err == nil {
		r.PeakRSS = peak
	}
	if r.VS == 0 {
		if c, err := b.counts(p); err == nil {
			r.VS, r.RS = c.Ports, c.Backends
		}
		r.SetEntries = b.setEntries(p)
	}
	_ = b.wipe()
	return r
}

// change makes change k and returns the time from the API write to p's data path
// showing it (the Service port sending to the endpoints it should, or gone), and how much
// of it the API writes themselves took: the apiserver shares the host's cores with the
// emulated VM, and a slow write delays what the proxy can see.
func (b *bench) change(ctx context.Context, p benchkit.Proxy, k int, deadline time.Time) (time.Duration, time.Duration, error) {
	i := (k / 4 * 2) % len(b.w.VIPs) // a ClusterIP Service
	name, vip := benchkit.SvcName(i), b.w.VIPs[i]
	var want int // the endpoints the port should send to; -1: no port
	start := time.Now()
	switch k % 4 {
	case 0: // one endpoint added
		if err := b.w.SetEndpoints(ctx, name, i, b.w.Endpoints+1); err != nil {
			return 0, 0, err
		}
		want = b.w.Endpoints + 1
	case 1: // and removed again
		if err := b.w.SetEndpoints(ctx, name, i, b.w.Endpoints); err != nil {
			return 0, 0, err
		}
		want = b.w.Endpoints
	case 2: // a Service added
		name = fmt.Sprintf("c-%05d", k)
		var err error
		if vip, err = b.w.Create(ctx, name, 60000+k, b.w.Endpoints); err != nil {
			return 0, 0, err
		}
		b.extra = append(b.extra, extraSvc{name, vip})
		start = time.Now() // the Service and its slice are both written now
		want = b.w.Endpoints
	case 3: // and deleted
		e := b.extra[len(b.extra)-1]
		b.extra = b.extra[:len(b.extra)-1]
		name, vip = e.name, e.vip
		start = time.Now()
		if err := b.w.Delete(ctx, name); err != nil {
			return 0, 0, err
		}
		want = -1
	}
	api := time.Since(start)
	dp := dataPathOf(p)
	for {
		if ok, err := programmed(dp, b.node, vip, 80, want); err == nil && ok {
			return time.Since(start), api, nil
		}
		if time.Now().After(deadline) || time.Since(start) > 5*time.Minute {
			return 0, 0, fmt.Errorf("not reflected after %v", time.Since(start).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type extraSvc struct{ name, vip string }

// changeKinds names change's four kinds, by k % 4.
var changeKinds = [4]string{"endpoint added", "endpoint removed", "Service added", "Service deleted"}

// saveDaemonLog copies ours' log out of the VM (BENCH_DAEMON_LOG).
func (m *measurement) saveDaemonLog() {
	if m.b.daemonLogs == "" || !m.p.Ours() {
		return
	}
	out, err := m.b.node.MustExec("cat /tmp/daemon.log")
	if err == nil { // the folder may not exist yet: the report makes it at the end
		err = os.MkdirAll(m.b.daemonLogs, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(m.b.daemonLogs, stepFile(m.p, "daemon", m.n, "log")), []byte(out), 0o644)
	}
	if err != nil {
		m.note("daemon log: %v", err)
	}
}

// transactions notes ours' nftables transactions over the whole run, the cold start's
// included: how many, the most set members one carried and the longest one took in the
// kernel (its nfnl lock held), from the daemon's ipvs_proxier_nftables_transaction*
// metrics.
func (m *measurement) transactions() {
	if !m.p.Nftables() {
		return
	}
	out, err := m.b.node.MustExec("wget -qO- http://127.0.0.1:10249/metrics | grep '^ipvs_proxier_nftables_transaction'")
	v := map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			v[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	if err != nil || len(v) != 3 {
		m.note("nftables transactions: not read (%v)", err)
		return
	}
	m.note("nftables transactions: %.0f, the largest %.0f set members, the longest %.1f ms in the kernel",
		v["ipvs_proxier_nftables_transactions_total"], v["ipvs_proxier_nftables_transaction_max_members"], v["ipvs_proxier_nftables_transaction_longest_seconds"]*1000)
}

// criticalLog reads when ours had programmed the critical Services (the apiserver's,
// the cluster DNS) ahead of the others on its first sync, from its log; 0 if not logged.
func (m *measurement) criticalLog() time.Duration {
	out, err := m.b.node.MustExec(`grep '"Programmed the critical Services first"' /tmp/daemon.log | tail -1`)
	var l map[string]any
	if err != nil || json.Unmarshal([]byte(strings.TrimSpace(out)), &l) != nil {
		m.note("critical Services: not logged")
		return 0
	}
	since, _ := l["sinceStart"].(float64)
	return time.Duration(since * float64(time.Second))
}

// errNote is ": the error" for a note, or nothing.
func errNote(err error) string {
	if err == nil {
		return ""
	}
	return "; the last read failed: " + err.Error()
}
