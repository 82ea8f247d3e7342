package main

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"strings"
)

// sample is one minute of the soak: the daemon's process from /proc in the VM, its
// /metrics, the kernel's conntrack count, and what the soak did and saw in the minute.
type sample struct {
	Minute         float64 // since the soak's start
	PID            int
	RSSMiB         float64
	HeapInuseMiB   float64 // go_memstats_heap_inuse_bytes
	Goroutines     float64
	OpenFDs        float64
	NetlinkSockets float64 // the process's sockets that /proc/net/netlink lists
	// Listening is the process's listening TCP sockets: /healthz, /metrics and one for
	// each healthCheckNodePort the cluster's ETP=Local Services ask for, each with its
	// accept goroutine. Their number follows the churned Services, not time.
	Listening float64
	// VirtualServers and RealServers are what the daemon has programmed
	// (ipvs_proxier_virtual_servers, ipvs_proxier_real_servers): the size of the state
	// it holds, which the churn moves as it moves the Services' types and policies.
	VirtualServers, RealServers float64
	SyncP50Ms                   float64 // of the syncs in the minute (kubeproxy_sync_proxy_rules_duration_seconds)
	SyncP99Ms                   float64
	Syncs                       float64
	// ChangeP50Ms and ChangeP99Ms are kubeproxy_network_programming_duration_seconds over
	// the minute: from a slice's trigger time (the host's clock) to its sync (the VM's).
	ChangeP50Ms, ChangeP99Ms float64
	// ProbeMs is one change the soak timed itself, on the host's clock: a probe
	// Service's endpoint replaced, until `ipvsadm -Ln` shows it.
	ProbeMs       float64
	Changes       float64 // changes the churn wrote in the minute
	DaemonChanges float64 // Service and EndpointSlice events the daemon counted in the minute
	DriftRepairs  float64 // kernel edits made behind the daemon's back and seen repaired, so far
	Events        float64 // Events the daemon emitted, so far (their counts summed)
	Conntrack     float64 // nf_conntrack_count
	Draining      float64 // ipvs_proxier_graceful_termination_queue
	SyncErrors    float64 // ipvs_proxier_sync_errors_total of the running process
	RequestsOK    float64 // so far, every traffic loop
	RequestsFail  float64
	Faults        string // the faults begun in the minute, ";"-separated
}

// csvHeader names the CSV's columns, one per sample field, in order.
var csvHeader = []string{"minute", "pid", "rss_mib", "heap_inuse_mib", "goroutines", "open_fds", "netlink_sockets", "listening_sockets",
	"virtual_servers", "real_servers",
	"sync_p50_ms", "sync_p99_ms", "syncs", "change_p50_ms", "change_p99_ms", "probe_change_ms", "changes", "daemon_changes",
	"drift_repairs", "events", "conntrack_entries", "draining_real_servers", "sync_errors", "requests_ok", "requests_failed", "faults"}

// row is s as CSV fields; a value not measured (NaN) is empty.
func (s sample) row() []string {
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	r2 := func(v float64) string { return f(math.Round(v*100) / 100) }
	return []string{r2(s.Minute), strconv.Itoa(s.PID), r2(s.RSSMiB), r2(s.HeapInuseMiB), f(s.Goroutines), f(s.OpenFDs), f(s.NetlinkSockets), f(s.Listening),
		f(s.VirtualServers), f(s.RealServers),
		r2(s.SyncP50Ms), r2(s.SyncP99Ms), f(s.Syncs), r2(s.ChangeP50Ms), r2(s.ChangeP99Ms), r2(s.ProbeMs), f(s.Changes), f(s.DaemonChanges),
		f(s.DriftRepairs), f(s.Events), f(s.Conntrack), f(s.Draining), f(s.SyncErrors), f(s.RequestsOK), f(s.RequestsFail), s.Faults}
}

// writeCSV writes the samples with a header line.
func writeCSV(path string, ss []sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(csvHeader)
	for _, s := range ss {
		_ = w.Write(s.row())
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// procStats reads the lines the sampler's shell prints in the VM ("KEY VALUE", one a
// line: pid, rss_kb, fds, netlink, conntrack).
func procStats(out string) map[string]float64 {
	m := map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
		}
	}
	return m
}
