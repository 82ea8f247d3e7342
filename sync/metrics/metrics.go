// Package metrics defines the daemon's Prometheus metrics. The sync metrics keep
// kube-proxy's names and meanings (pkg/proxy/metrics), so dashboards built for kube-proxy
// keep working; the ipvs_proxier_* and ipvs_* metrics are our own. Gauges that describe
// state (object counts, pending changes, the drain queue) are read at scrape time from
// the daemon's parts, so the sync loop pays nothing for them. The writer
// (sync/reconcile) imports none of this: *Metrics is its Observer, set by the daemon, and
// the counters it publishes are read from its snapshot.
package metrics

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Counts are the kernel objects the daemon has programmed.
type Counts struct {
	Services, VirtualServers, RealServers, SetEntries, Addresses int
}

// Sources are the read-at-scrape-time inputs. Any may be nil.
type Sources struct {
	Counts func() Counts
	// Draining is the graceful-termination queue length.
	Draining func() int
	// Pending returns the Services and EndpointSlices changed but not yet synced.
	Pending func() (services, endpoints int)
	// ChangesTotal returns the Service and EndpointSlice events seen so far.
	ChangesTotal func() (services, endpoints uint64)
	// NoLocal counts Services of a family using the fallback of a Local policy with no
	// local endpoint.
	NoLocal func(kernel.Family) (internal, external int)
	// Families are the IP families the daemon serves: kube-proxy's ip_family label
	// values. kube-proxy runs one proxier per family, each with its own series; one loop
	// here serves both, so each sync is recorded under every family. Empty means IPv4.
	Families []kernel.Family
	// RulesBackend names what holds the sets and rules ("iptables", "nftables"), for
	// ipvs_proxier_rules_backend; empty exports none.
	RulesBackend string
	// Transactions reads the nftables backend's transaction counts, for the
	// ipvs_proxier_nftables_transaction* metrics; nil (the iptables backend) exports none.
	Transactions func() Transactions
}

// Transactions are the nftables backend's transactions so far: how many, the most
// members one carried, and the longest one took in the kernel.
type Transactions struct {
	Count, LargestMembers int
	Longest               time.Duration
}

// Metrics holds the collectors. A nil *Metrics records nothing, so tests and `plan` can
// run without one.
type Metrics struct {
	// Registry holds every metric, plus the Go and process collectors.
	Registry *prometheus.Registry

	families                            []string
	syncDuration, syncFull, syncPartial *prometheus.HistogramVec
	lastSync, lastQueued                *prometheus.GaugeVec
	programming                         *prometheus.HistogramVec
	syncErrors                          prometheus.Counter
	kernelErrors                        *prometheus.CounterVec
	kernelRefused                       *prometheus.CounterVec
	healthz, livez                      *prometheus.CounterVec
	restoreFailures                     *prometheus.CounterVec
	// reconcileDuration and reconcileDeleted are kube-proxy's conntrack reconciler
	// metrics (pkg/proxy/metrics: conntrack_reconciler_*), by ip_family.
	reconcileDuration *prometheus.HistogramVec
	reconcileDeleted  *prometheus.CounterVec
}

// kube-proxy's sync histogram: 1 ms doubling, 15 buckets (pkg/proxy/metrics/metrics.go).
var syncBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// New registers every metric; src feeds the state gauges.
func New(src Sources) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// kube-proxy v1.33+ labels its sync metrics with ip_family (pkg/proxy/metrics).
	fam := []string{"ip_family"}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, fam)
		reg.MustRegister(h)
		return h
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, fam)
		reg.MustRegister(g)
		return g
	}
	families := []string{kernel.IPv4.String()}
	if len(src.Families) > 0 {
		families = families[:0]
		for _, f := range src.Families {
			families = append(families, f.String())
		}
	}
	m := &Metrics{
		Registry:     reg,
		families:     families,
		syncDuration: hist("kubeproxy_sync_proxy_rules_duration_seconds", "Time of each sync, full or partial, including failed ones.", syncBuckets),
		syncFull:     hist("kubeproxy_sync_full_proxy_rules_duration_seconds", "Time of each full sync (kernel dump, diff, repair, prune).", syncBuckets),
		syncPartial:  hist("kubeproxy_sync_partial_proxy_rules_duration_seconds", "Time of each partial sync (changed Services only).", syncBuckets),
		lastSync:     gauge("kubeproxy_sync_proxy_rules_last_timestamp_seconds", "Unix time of the last successful sync."),
		lastQueued:   gauge("kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", "Unix time of the last change that asked for a sync."),
		programming: hist("kubeproxy_network_programming_duration_seconds",
			"Time from an EndpointSlice's last-change-trigger-time to its change being programmed.",
			append(append(prometheus.LinearBuckets(0.25, 0.25, 2), prometheus.LinearBuckets(1, 1, 59)...),
				append(prometheus.LinearBuckets(60, 5, 12), prometheus.LinearBuckets(120, 30, 7)...)...)),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "ipvs_proxier_sync_errors_total", Help: "Syncs that failed (retried early)."}),
		kernelErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ipvs_proxier_kernel_operation_errors_total",
			Help: "Kernel operations that failed, by operation; 'already exists' on add and 'not found' on delete are not errors."}, []string{"operation"}),
		kernelRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ipvs_proxier_kernel_refused_total",
			Help: "Writes the kernel refused for what they carry, by object (virtual_server, real_server, address, set_member); each costs only its own Service, which gets a KernelRefused Event, and is retried at each sync."}, []string{"object"}),
		healthz: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_proxy_healthz_total", Help: "/healthz responses by code."}, []string{"code"}),
		livez:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_proxy_livez_total", Help: "/livez responses by code."}, []string{"code"}),
		// kube-proxy's IPVS mode exports it and common alerts use it (pkg/proxy/metrics).
		restoreFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
			Help: "Cumulative iptables-restore failures of our fixed rule set."}, []string{"ip_family"}),
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kubeproxy_conntrack_reconciler_sync_duration_seconds",
			Help: "Time of each UDP conntrack reconcile.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"ip_family"}),
		reconcileDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_conntrack_reconciler_deleted_entries_total",
			Help: "Stale UDP conntrack flows the reconciler deleted."}, []string{"ip_family"}),
	}
	// Every series exists from the start, at 0, as the unlabelled metrics did: a
	// dashboard has its series before the first sync, and an alert on an increase sees
	// the first failure.
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		m.restoreFailures.WithLabelValues(f.String())
		m.reconcileDuration.WithLabelValues(f.String())
		m.reconcileDeleted.WithLabelValues(f.String())
	}
	for _, f := range families {
		for _, h := range []*prometheus.HistogramVec{m.syncDuration, m.syncFull, m.syncPartial, m.programming} {
			h.WithLabelValues(f)
		}
		m.lastSync.WithLabelValues(f)
		m.lastQueued.WithLabelValues(f)
	}
	for _, o := range []string{"virtual_server", "real_server", "address", "set_member"} {
		m.kernelRefused.WithLabelValues(o)
	}
	reg.MustRegister(m.syncErrors, m.kernelErrors, m.kernelRefused, m.healthz, m.livez, m.restoreFailures, m.reconcileDuration, m.reconcileDeleted)
	m.registerSources(src)
	return m
}

// registerChanges registers kube-proxy's pair of change series,
// kubeproxy_sync_proxy_rules_{service,endpoint}_changes_SUFFIX, as gauges or counters;
// read returns the Service and the EndpointSlice value, help is formatted with each kind.
func (m *Metrics) registerChanges(suffix, help string, counter bool, read func() (services, endpoints float64)) {
	for i, kind := range []string{"Service", "EndpointSlice"} {
		name := "kubeproxy_sync_proxy_rules_" + []string{"service", "endpoint"}[i] + "_changes_" + suffix
		value := func() float64 { s, e := read(); return []float64{s, e}[i] }
		if counter {
			m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: fmt.Sprintf(help, kind)}, value))
		} else {
			m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: fmt.Sprintf(help, kind)}, value))
		}
	}
}

// registerSources registers the scrape-time gauges and counters.
func (m *Metrics) registerSources(src Sources) {
	if src.Counts != nil {
		for name, pick := range map[string]func(Counts) int{
			"ipvs_proxier_services":        func(c Counts) int { return c.Services },
			"ipvs_proxier_virtual_servers": func(c Counts) int { return c.VirtualServers },
			"ipvs_proxier_real_servers":    func(c Counts) int { return c.RealServers },
			"ipvs_proxier_ipset_entries":   func(c Counts) int { return c.SetEntries },
			"ipvs_proxier_bound_addresses": func(c Counts) int { return c.Addresses },
		} {
			m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: "Programmed kernel objects: " + name[len("ipvs_proxier_"):] + "."},
				func() float64 { return float64(pick(src.Counts())) }))
		}
	}
	if src.RulesBackend != "" {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ipvs_proxier_rules_backend",
			Help: "1 for the rules backend in use (--rules-backend)."}, []string{"backend"})
		g.WithLabelValues(src.RulesBackend).Set(1)
		m.Registry.MustRegister(g)
	}
	if src.Transactions != nil {
		m.registerTransactions(src.Transactions)
	}
	if src.Draining != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ipvs_proxier_graceful_termination_queue",
			Help: "Real servers draining at weight 0."}, func() float64 { return float64(src.Draining()) }))
	}
	if src.Pending != nil {
		m.registerChanges("pending", "Pending %s changes.", false, func() (float64, float64) { s, e := src.Pending(); return float64(s), float64(e) })
	}
	if src.ChangesTotal != nil {
		m.registerChanges("total", "%s events.", true, func() (float64, float64) { s, e := src.ChangesTotal(); return float64(s), float64(e) })
	}
	if src.NoLocal != nil {
		fams := src.Families
		if len(fams) == 0 {
			fams = []kernel.Family{kernel.IPv4}
		}
		m.Registry.MustRegister(noLocalCollector{src.NoLocal, fams})
	}
}

// ObserveSync records one sync.
func (m *Metrics) ObserveSync(full bool, took time.Duration, err error, end time.Time) {
	if m == nil {
		return
	}
	if err != nil {
		m.syncErrors.Inc()
	}
	for _, f := range m.families {
		m.syncDuration.WithLabelValues(f).Observe(took.Seconds())
		if full {
			m.syncFull.WithLabelValues(f).Observe(took.Seconds())
		} else {
			m.syncPartial.WithLabelValues(f).Observe(took.Seconds())
		}
		if err == nil {
			m.lastSync.WithLabelValues(f).Set(float64(end.UnixNano()) / 1e9)
		}
	}
}

// Queued records that a change asked for a sync.
func (m *Metrics) Queued(t time.Time) {
	if m == nil {
		return
	}
	for _, f := range m.families {
		m.lastQueued.WithLabelValues(f).Set(float64(t.UnixNano()) / 1e9)
	}
}

// ObserveProgramming records the latency of one change to an EndpointSlice of family
// f. The trigger time comes from another machine's clock; a change that seems to come
// from the future (skew) counts as 0 rather than being dropped or skewing the sum
// negative.
func (m *Metrics) ObserveProgramming(f kernel.Family, d time.Duration) {
	if m != nil {
		m.programming.WithLabelValues(f.String()).Observe(max(d, 0).Seconds())
	}
}

// KernelHooks counts failed kernel operations; wrap the kernel with kernel.Wrap.
func (m *Metrics) KernelHooks() kernel.Hooks {
	return kernel.Hooks{After: func(op string, err error) {
		if m != nil && err != nil && !errors.Is(err, kernel.ErrExist) && !errors.Is(err, kernel.ErrNotFound) {
			m.kernelErrors.WithLabelValues(op).Inc()
		}
	}}
}

// KernelRefused counts one write the kernel refused for what it carries (kernel.ErrRefused).
func (m *Metrics) KernelRefused(object string) {
	if m != nil {
		m.kernelRefused.WithLabelValues(object).Inc()
	}
}

// IptablesRestoreFailed counts one failed iptables-restore of family f's rules.
func (m *Metrics) IptablesRestoreFailed(f kernel.Family) {
	if m != nil {
		m.restoreFailures.WithLabelValues(f.String()).Inc()
	}
}

// ConntrackReconciled records one UDP conntrack reconcile of family f.
func (m *Metrics) ConntrackReconciled(f kernel.Family, took time.Duration, deleted int) {
	if m != nil {
		m.reconcileDuration.WithLabelValues(f.String()).Observe(took.Seconds())
		m.reconcileDeleted.WithLabelValues(f.String()).Add(float64(deleted))
	}
}

// Healthz and Livez count health responses by code.
func (m *Metrics) Healthz(code int) {
	if m != nil {
		m.healthz.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

// Livez counts /livez responses by code.
func (m *Metrics) Livez(code int) {
	if m != nil {
		m.livez.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

// Register adds another collector (the conntrack monitor, the virtual-server stats).
func (m *Metrics) Register(c prometheus.Collector) {
	if m != nil {
		m.Registry.MustRegister(c)
	}
}

// noLocalDesc is kube-proxy's gauge: the Services of a family with endpoints but none on
// this node under a Local policy, counted once per Service (pkg/proxy/ipvs/proxier.go,
// serviceNoLocalEndpointsInternal/External), labelled as kube-proxy 1.33+ labels it.
var noLocalDesc = prometheus.NewDesc("kubeproxy_sync_proxy_rules_no_local_endpoints_total",
	"Services with a Local traffic policy and no local endpoint, which use the fallback.", []string{"traffic_policy", "ip_family"}, nil)

type noLocalCollector struct {
	fn       func(kernel.Family) (int, int)
	families []kernel.Family
}

func (c noLocalCollector) Describe(ch chan<- *prometheus.Desc) { ch <- noLocalDesc }
func (c noLocalCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.families {
		in, ex := c.fn(f)
		ch <- prometheus.MustNewConstMetric(noLocalDesc, prometheus.GaugeValue, float64(in), "internal", f.String())
		ch <- prometheus.MustNewConstMetric(noLocalDesc, prometheus.GaugeValue, float64(ex), "external", f.String())
	}
}
