package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// procScript prints the daemon's process figures and the conntrack count, "KEY VALUE"
// a line: its resident memory, its open fds, of those the netlink sockets (the socket
// inodes among its fds that /proc/PID/net/netlink lists, last column) and the listening
// TCP sockets (those /proc/PID/net/tcp and tcp6 list in state 0A, inode in column 10).
const procScript = `pid=$(cat /tmp/daemon.pid); echo pid $pid
echo rss_kb $(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
echo fds $(ls /proc/$pid/fd | wc -l)
ls -l /proc/$pid/fd 2>/dev/null | grep -o 'socket:\[[0-9]*\]' | tr -dc '0-9\n' > /tmp/soak-sockets
echo netlink $(awk 'NR == FNR {s[$1] = 1; next} FNR > 1 && ($NF in s) {n++} END {print n + 0}' /tmp/soak-sockets /proc/$pid/net/netlink)
echo listening $(awk 'NR == FNR {s[$1] = 1; next} FNR > 1 && $4 == "0A" && ($10 in s) {n++} END {print n + 0}' /tmp/soak-sockets /proc/$pid/net/tcp /proc/$pid/net/tcp6)
echo conntrack $(cat /proc/sys/net/netfilter/nf_conntrack_count)`

// metricsScript fetches the daemon's /metrics inside the node and prints the HTTP
// answer whole. Through the agent's /get, which gives up after 5 s, the 300 kB of a
// scrape often did not arrive in time from a VM starved of CPU by a busy host; nc has
// no deadline but timeout's.
const metricsScript = `printf 'GET /metrics HTTP/1.0\r\n\r\n' | timeout 120 nc 127.0.0.1 10249`

// scrape reads the daemon's /metrics.
func (s *soak) scrape() (map[string]*dto.MetricFamily, error) {
	out, err := s.node.MustExec(metricsScript)
	if err != nil {
		return nil, err
	}
	head, body, ok := strings.Cut(out, "\r\n\r\n")
	if status, _, _ := strings.Cut(head, "\r\n"); !ok || !strings.Contains(status, " 200 ") {
		return nil, fmt.Errorf("/metrics: %q", status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(body))
}

// metric is the value of a gauge or counter of the daemon's (its IPv4 series when it
// has one per family), NaN when it cannot be read.
func (s *soak) metric(name string) float64 {
	fams, err := s.scrape()
	if err != nil {
		return math.NaN()
	}
	return value(one(fams, name))
}

// fullSyncs is how many full syncs the running daemon has made (the count of its
// full-sync histogram), -1 when /metrics cannot be read.
func (s *soak) fullSyncs() float64 {
	fams, err := s.scrape()
	if err != nil {
		return -1
	}
	m := one(fams, "kubeproxy_sync_full_proxy_rules_duration_seconds")
	if m == nil || m.GetHistogram() == nil {
		return -1
	}
	return float64(m.GetHistogram().GetSampleCount())
}

// one is name's IPv4 series, or its first; nil when there is none.
func one(fams map[string]*dto.MetricFamily, name string) *dto.Metric {
	f := fams[name]
	if f == nil || len(f.Metric) == 0 {
		return nil
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "ip_family" && l.GetValue() == "IPv4" {
				return m
			}
		}
	}
	return f.Metric[0]
}

// value is a gauge's or counter's value, NaN for nil.
func value(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return math.NaN()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

// sampler takes a sample a minute; it keeps the last scrape's histograms and counters
// to tell the minute's share.
type sampler struct {
	s                     *soak
	prevSync, prevProgram histogram
	prevChanges           float64
	prevApplied           int64
	prevAt                time.Time
	events                map[types.UID]int32
}

// take takes one sample; what cannot be read is NaN (an empty CSV cell).
func (sm *sampler) take(ctx context.Context) sample {
	s := sm.s
	now := time.Now()
	smp := sample{Minute: now.Sub(s.start).Minutes()}
	nan := math.NaN()
	smp.RSSMiB, smp.HeapInuseMiB, smp.Goroutines, smp.OpenFDs, smp.NetlinkSockets, smp.Listening = nan, nan, nan, nan, nan, nan
	smp.SyncP50Ms, smp.SyncP99Ms, smp.Syncs, smp.ChangeP50Ms, smp.ChangeP99Ms, smp.ProbeMs = nan, nan, nan, nan, nan, nan
	smp.DaemonChanges, smp.Conntrack, smp.Draining, smp.SyncErrors, smp.Events = nan, nan, nan, nan, nan
	smp.VirtualServers, smp.RealServers = nan, nan
	if out, err := s.node.MustExec(procScript); err == nil {
		p := procStats(out)
		smp.PID = int(p["pid"])
		// With no daemon running (between a SIGKILL and its restart) /proc has no
		// process to read: those cells stay empty, not a zero that reads as a drop.
		if _, running := p["rss_kb"]; running {
			smp.RSSMiB, smp.OpenFDs, smp.NetlinkSockets, smp.Listening = p["rss_kb"]/1024, p["fds"], p["netlink"], p["listening"]
		}
		smp.Conntrack = p["conntrack"]
	}
	if fams, err := s.scrape(); err == nil {
		smp.HeapInuseMiB = value(one(fams, "go_memstats_heap_inuse_bytes")) / (1 << 20)
		smp.Goroutines = value(one(fams, "go_goroutines"))
		smp.Draining = value(one(fams, "ipvs_proxier_graceful_termination_queue"))
		smp.SyncErrors = value(one(fams, "ipvs_proxier_sync_errors_total"))
		smp.VirtualServers = value(one(fams, "ipvs_proxier_virtual_servers"))
		smp.RealServers = value(one(fams, "ipvs_proxier_real_servers"))
		if m := one(fams, "kubeproxy_sync_proxy_rules_duration_seconds"); m != nil {
			h := histogramOf(m)
			d := h.since(sm.prevSync)
			smp.SyncP50Ms, smp.SyncP99Ms, smp.Syncs = d.quantile(0.5)*1000, d.quantile(0.99)*1000, float64(d.Total)
			sm.prevSync = h
		}
		if m := one(fams, "kubeproxy_network_programming_duration_seconds"); m != nil {
			h := histogramOf(m)
			d := h.since(sm.prevProgram)
			smp.ChangeP50Ms, smp.ChangeP99Ms = d.quantile(0.5)*1000, d.quantile(0.99)*1000
			sm.prevProgram = h
		}
		changes := value(one(fams, "kubeproxy_sync_proxy_rules_service_changes_total")) + value(one(fams, "kubeproxy_sync_proxy_rules_endpoint_changes_total"))
		smp.DaemonChanges = counterSince(changes, sm.prevChanges)
		sm.prevChanges = changes
	}
	if d, err := s.probe.tryChange(ctx, time.Minute); err == nil {
		smp.ProbeMs = float64(d) / float64(time.Millisecond)
	}
	applied := s.churn.applied.Load()
	smp.Changes = float64(applied - sm.prevApplied)
	sm.prevApplied = applied
	smp.DriftRepairs = float64(s.faults.repaired.Load())
	if n, err := sm.countEvents(ctx); err == nil {
		smp.Events = n
	}
	for _, l := range s.loops {
		smp.RequestsOK += float64(l.ok.Load())
		smp.RequestsFail += float64(l.failed.Load())
	}
	if sm.prevAt.IsZero() {
		sm.prevAt = s.start
	}
	smp.Faults = s.faults.begunIn(sm.prevAt, now)
	sm.prevAt = now
	benchkit.Logf("sample: minute %.1f rss %.1f MiB goroutines %v fds %v sync p99 %.1f ms changes %v failed %v",
		smp.Minute, smp.RSSMiB, smp.Goroutines, smp.OpenFDs, smp.SyncP99Ms, smp.Changes, smp.RequestsFail)
	return smp
}

// countEvents is every Event the daemon emitted so far, each counted as often as it
// was (its count): the Events are listed each minute, well within their hour of life
// (kube-apiserver --event-ttl), and each one's highest count kept.
func (sm *sampler) countEvents(ctx context.Context) (float64, error) {
	evs, err := sm.s.client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	if sm.events == nil {
		sm.events = map[types.UID]int32{}
	}
	for _, e := range evs.Items {
		if fromDaemon(&e) {
			sm.events[e.UID] = max(sm.events[e.UID], max(e.Count, 1))
		}
	}
	total := 0.0
	for _, c := range sm.events {
		total += float64(c)
	}
	return total, nil
}

// fromDaemon reports whether the daemon emitted e (its EventSource's component).
func fromDaemon(e *v1.Event) bool {
	return e.Source.Component == "ipvs-proxier" || e.ReportingController == "ipvs-proxier"
}
