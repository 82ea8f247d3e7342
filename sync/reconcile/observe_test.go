package reconcile

import (
	"net/netip"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics/metricstest"
)

// recordingHC is a HealthCheckSink that remembers what it was told.
type recordingHC struct {
	want    map[proxier.ServiceKey]proxier.HealthCheck
	sets    int
	applies int
	addrs   []netip.Addr
}

func (r *recordingHC) SetHealthCheck(k proxier.ServiceKey, hc *proxier.HealthCheck) {
	r.sets++
	if hc == nil {
		delete(r.want, k)
	} else {
		r.want[k] = *hc
	}
}
func (r *recordingHC) ReplaceHealthChecks(all map[proxier.ServiceKey]proxier.HealthCheck) {
	r.want = all
}
func (r *recordingHC) Apply()                        { r.applies++ }
func (r *recordingHC) SetAddresses(ips []netip.Addr) { r.addrs = ips }

// syncedAt is an observed harness on the clock *now, which the test moves, with
// testdata/basic.yaml synced.
func syncedAt(t *testing.T, now *time.Time) (*harness, *metrics.Metrics) {
	h, m, _ := newObservedHarness(t, kernel.Kernel{}, nil, func() time.Time { return *now })
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	return h, m
}

// newObservedHarness wires metrics the way the daemon does.
func newObservedHarness(t *testing.T, k kernel.Kernel, fake *kernel.Fake, now func() time.Time) (*harness, *metrics.Metrics, *recordingHC) {
	var h *harness
	m := metrics.New(metrics.Sources{
		Counts: func() metrics.Counts { return metrics.Counts(h.syncer.Counts()) }, Draining: func() int { return h.syncer.Draining() },
		Pending: func() (int, int) { return h.tracker.PendingByKind() }, ChangesTotal: func() (uint64, uint64) { return h.tracker.Totals() },
		NoLocal:  func(f kernel.Family) (int, int) { return h.syncer.NoLocal(f) },
		Families: []kernel.Family{kernel.IPv4, kernel.IPv6},
	})
	hc := &recordingHC{want: map[proxier.ServiceKey]proxier.HealthCheck{}}
	if fake == nil {
		fake = kernel.NewFake()
	}
	if k.IPVS == nil {
		k = fake.Kernel()
	}
	h = newHarness(t, kernel.Wrap(k, m.KernelHooks()), fake, func(o *Options) {
		o.Observer, o.HealthChecks, o.Now = m, hc, now
	})
	m.Register(&metrics.VSCollector{Stats: h.syncer.VSStats})
	return h, m, hc
}

func scrape(t *testing.T, m *metrics.Metrics) metricstest.Families {
	t.Helper()
	f, err := metricstest.Scrape(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// kernelCounts counts what the fake kernel holds (all of it ours in these tests).
func kernelCounts(t *testing.T, h *harness) Counts {
	t.Helper()
	var c Counts
	vss, err := h.fake.ListVirtualServers()
	if err != nil {
		t.Fatal(err)
	}
	c.VirtualServers = len(vss)
	for _, vs := range vss {
		rss, err := h.fake.ListRealServers(vs.VSKey)
		if err != nil {
			t.Fatal(err)
		}
		c.RealServers += len(rss)
	}
	for _, set := range proxier.Sets(h.syncer.cfg.Families) {
		es, err := h.fake.ListEntries(set.Name)
		if err != nil {
			t.Fatal(err)
		}
		c.SetEntries += len(es)
	}
	addrs, err := h.fake.ListAddresses(h.syncer.cfg.DummyDevice)
	if err != nil {
		t.Fatal(err)
	}
	c.Addresses = len(addrs)
	return c
}

func TestMetricsAfterSyncs(t *testing.T) {
	h, m, hc := newObservedHarness(t, kernel.Kernel{}, nil, nil)
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	f := scrape(t, m)
	// The gauges must match the fake kernel's own dumps, not the counts they are read from.
	c := kernelCounts(t, h)
	if c.VirtualServers == 0 || c.RealServers == 0 || c.SetEntries == 0 || c.Addresses == 0 {
		t.Fatalf("kernel counts %+v", c)
	}
	for name, want := range map[string]int{
		"ipvs_proxier_virtual_servers": c.VirtualServers, "ipvs_proxier_real_servers": c.RealServers,
		"ipvs_proxier_ipset_entries": c.SetEntries, "ipvs_proxier_bound_addresses": c.Addresses,
		"kubeproxy_sync_proxy_rules_duration_seconds": 1, "kubeproxy_sync_full_proxy_rules_duration_seconds": 1,
		"kubeproxy_sync_partial_proxy_rules_duration_seconds": 0,
	} {
		if got, ok := f.Value(name, nil); !ok || got != float64(want) {
			t.Errorf("%s = %v (present %v), want %d", name, got, ok, want)
		}
	}
	if ts, _ := f.Value("kubeproxy_sync_proxy_rules_last_timestamp_seconds", nil); ts == 0 {
		t.Error("last sync timestamp not set")
	}
	// shop/front is ETP=Local with a local endpoint, so it is not in the fallback.
	if v, _ := f.Value("kubeproxy_sync_proxy_rules_no_local_endpoints_total", map[string]string{"traffic_policy": "external", "ip_family": "IPv4"}); v != 0 {
		t.Errorf("no_local external = %v, want 0", v)
	}
	front := proxier.ServiceKey{Namespace: "shop", Name: "front"}
	if got := hc.want[front]; got.Port != 32000 || got.LocalEndpoints != 1 || hc.applies != 1 {
		t.Errorf("health checks %+v after %d applies", hc.want, hc.applies)
	}

	// Move front's only local endpoint away: the fallback is counted, the health check
	// reports 0, and the partial sync tells only that Service.
	sl := h.src.Slices(front)[0].DeepCopy()
	sl.Endpoints[0].NodeName = ptrTo("other-node")
	k, _ := h.src.SetSlice(sl)
	h.tracker.EndpointsChanged(k)
	if s, e := h.tracker.PendingByKind(); s != 0 || e != 1 {
		t.Errorf("pending services %d endpoints %d, want 0 1", s, e)
	}
	hc.sets = 0
	h.mustSync(t)
	f = scrape(t, m)
	if v, _ := f.Value("kubeproxy_sync_proxy_rules_no_local_endpoints_total", map[string]string{"traffic_policy": "external", "ip_family": "IPv4"}); v != 1 {
		t.Errorf("no_local external IPv4 = %v, want 1", v)
	}
	if v, ok := f.Value("kubeproxy_sync_proxy_rules_no_local_endpoints_total", map[string]string{"traffic_policy": "external", "ip_family": "IPv6"}); v != 0 || !ok {
		t.Errorf("no_local external IPv6 = %v (present %v), want 0", v, ok)
	}
	if hc.want[front].LocalEndpoints != 0 || hc.sets != 1 {
		t.Errorf("health check %+v after %d sets", hc.want[front], hc.sets)
	}
	if v, _ := f.Value("kubeproxy_sync_partial_proxy_rules_duration_seconds", nil); v != 1 {
		t.Errorf("partial syncs = %v, want 1", v)
	}
	if v, _ := f.Value("kubeproxy_sync_proxy_rules_endpoint_changes_total", nil); v != 1 {
		t.Errorf("endpoint changes total = %v, want 1", v)
	}
	if v, _ := f.Value("kubeproxy_sync_proxy_rules_endpoint_changes_pending", nil); v != 0 {
		t.Errorf("endpoint changes pending = %v after the sync", v)
	}
}

func TestMetricsVirtualServerStats(t *testing.T) {
	h, m, _ := newObservedHarness(t, kernel.Kernel{}, nil, nil)
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	vip := kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("10.96.1.1"), Port: 443}
	h.fake.AddTraffic(vip, kernel.VSStats{Connections: 7, PacketsIn: 70, PacketsOut: 60, BytesIn: 7000, BytesOut: 9000})
	// A virtual server someone else owns is not exported.
	foreign := kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: mustAddr("192.0.2.99"), Port: 1}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}
	must(t, h.fake.AddVirtualServer(foreign))
	labels := map[string]string{"namespace": "shop", "name": "front", "vip": "10.96.1.1", "port": "443", "protocol": "TCP"}
	// A scrape reads what the last full sync read, not the kernel, and that one (the
	// first sync's) was taken before anything was programmed.
	h.fake.ResetOps()
	f := scrape(t, m)
	if got, ok := f.Value("ipvs_connections_total", labels); ok {
		t.Errorf("before the next full sync: ipvs_connections_total = %v, want no series yet", got)
	}
	if ops := h.fake.Ops(); len(ops) != 0 {
		t.Errorf("a scrape called the kernel: %v", ops)
	}
	h.tracker.AllChanged()
	h.mustSync(t)
	f = scrape(t, m)
	for name, want := range map[string]float64{"ipvs_connections_total": 7, "ipvs_incoming_packets_total": 70,
		"ipvs_outgoing_packets_total": 60, "ipvs_incoming_bytes_total": 7000, "ipvs_outgoing_bytes_total": 9000} {
		if got, ok := f.Value(name, labels); !ok || got != want {
			t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
		}
	}
	if _, ok := f.Value("ipvs_connections_total", map[string]string{"vip": "192.0.2.99"}); ok {
		t.Error("a foreign virtual server is exported")
	}
	n := len(f["ipvs_connections_total"].GetMetric())
	if want := h.syncer.Counts().VirtualServers; n != want {
		t.Errorf("%d per-VS series, want one per owned virtual server (%d)", n, want)
	}
}

func TestMetricsKernelErrors(t *testing.T) {
	fake := kernel.NewFake()
	faulty := kernel.NewFaulty(fake.Kernel(), 0.3, 7)
	h, m, _ := newObservedHarness(t, faulty.Kernel(), fake, nil)
	h.load(t, "testdata/basic.yaml")
	_ = h.syncer.Sync()
	f := scrape(t, m)
	total := 0.0
	for _, mt := range f["ipvs_proxier_kernel_operation_errors_total"].GetMetric() {
		total += mt.GetCounter().GetValue()
	}
	if faulty.Injected == 0 || total != float64(faulty.Injected) {
		t.Errorf("kernel errors counted %v, injected %d", total, faulty.Injected)
	}
	if v, _ := f.Value("ipvs_proxier_sync_errors_total", nil); v != 1 {
		t.Errorf("sync errors %v, want 1", v)
	}
}

func TestMetricsNetworkProgramming(t *testing.T) {
	now := time.Unix(10_000, 0)
	h, m := syncedAt(t, &now)
	if v, _ := scrape(t, m).Value("kubeproxy_network_programming_duration_seconds", nil); v != 0 {
		t.Fatalf("%v observations at start; slices older than the daemon must not count", v)
	}
	front := proxier.ServiceKey{Namespace: "shop", Name: "front"}
	sl := h.src.Slices(front)[0].DeepCopy()
	sl.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: now.Add(2 * time.Second).Format(time.RFC3339Nano)}
	sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{Addresses: []string{"10.244.0.21"}, NodeName: ptrTo(testNode)})
	h.src.SetSlice(sl)
	h.tracker.EndpointsChanged(front)
	now = now.Add(5 * time.Second) // programmed 3 s after the trigger
	h.mustSync(t)
	mf := scrape(t, m)["kubeproxy_network_programming_duration_seconds"].GetMetric()[0].GetHistogram()
	if mf.GetSampleCount() != 1 || mf.GetSampleSum() != 3 {
		t.Errorf("observed %d samples summing %v s, want 1 of 3 s", mf.GetSampleCount(), mf.GetSampleSum())
	}
	// The same trigger time is not observed again on the next sync of that Service.
	h.tracker.ServiceChanged(front)
	h.mustSync(t)
	if v, _ := scrape(t, m).Value("kubeproxy_network_programming_duration_seconds", nil); v != 1 {
		t.Errorf("%v observations, want still 1", v)
	}
	// A Service left without slices forgets the newest trigger time it had seen.
	for _, o := range h.src.Slices(front) {
		h.src.DeleteSlice(front, o.Name)
	}
	h.tracker.EndpointsChanged(front)
	h.mustSync(t)
	if _, ok := h.syncer.latencies.seen[front]; ok {
		t.Error("the trigger time of a Service without slices is kept")
	}
}

// TestSyncMetricsPerFamily: kube-proxy's sync metrics carry ip_family, one series per
// family served (each sync counts under both: one loop serves both); network
// programming latency counts under the family of the EndpointSlice that changed.
func TestSyncMetricsPerFamily(t *testing.T) {
	now := time.Unix(10_000, 0)
	h, m := syncedAt(t, &now)
	f := scrape(t, m)
	for _, fam := range []string{"IPv4", "IPv6"} {
		l := map[string]string{"ip_family": fam}
		for name, want := range map[string]float64{"kubeproxy_sync_proxy_rules_duration_seconds": 1,
			"kubeproxy_sync_full_proxy_rules_duration_seconds": 1, "kubeproxy_sync_partial_proxy_rules_duration_seconds": 0} {
			if v, ok := f.Value(name, l); !ok || v != want {
				t.Errorf("%s{%s} = %v (present %v), want %v", name, fam, v, ok, want)
			}
		}
		if v, _ := f.Value("kubeproxy_sync_proxy_rules_last_timestamp_seconds", l); v == 0 {
			t.Errorf("no last sync timestamp for %s", fam)
		}
	}
	front := proxier.ServiceKey{Namespace: "shop", Name: "front"}
	sl := h.src.Slices(front)[0].DeepCopy()
	if sl.AddressType != discovery.AddressTypeIPv4 {
		t.Fatalf("fixture slice is %s", sl.AddressType)
	}
	sl.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: now.Add(time.Second).Format(time.RFC3339Nano)}
	h.src.SetSlice(sl)
	h.tracker.EndpointsChanged(front)
	now = now.Add(2 * time.Second)
	h.mustSync(t)
	f = scrape(t, m)
	v4, _ := f.Value("kubeproxy_network_programming_duration_seconds", map[string]string{"ip_family": "IPv4"})
	v6, _ := f.Value("kubeproxy_network_programming_duration_seconds", map[string]string{"ip_family": "IPv6"})
	if v4 != 1 || v6 != 0 {
		t.Errorf("programming observations IPv4 %v IPv6 %v, want 1 and 0", v4, v6)
	}
}

func ptrTo[T any](v T) *T { return &v }

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestIptablesRestoreFailuresMetric: a failed iptables-restore counts in kube-proxy's
// kubeproxy_sync_proxy_rules_iptables_restore_failures_total under its family; both
// families' series exist at 0 before any failure.
func TestIptablesRestoreFailuresMetric(t *testing.T) {
	fail := true
	fake := kernel.NewFake()
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Before: func(op string) error {
		if op == "Restore" && fail {
			return kernel.ErrInjected
		}
		return nil
	}})
	h, m, _ := newObservedHarness(t, k, fake, nil)
	name := "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"
	for _, fam := range []string{"IPv4", "IPv6"} {
		if v, ok := scrape(t, m).Value(name, map[string]string{"ip_family": fam}); !ok || v != 0 {
			t.Errorf("%s before any sync: %v (present %v)", fam, v, ok)
		}
	}
	h.load(t, "testdata/basic.yaml")
	if err := h.syncer.Sync(); err == nil {
		t.Fatal("sync with failing restores succeeded")
	}
	v4, _ := scrape(t, m).Value(name, map[string]string{"ip_family": "IPv4"})
	v6, _ := scrape(t, m).Value(name, map[string]string{"ip_family": "IPv6"})
	if v4 != 1 || v6 != 1 {
		t.Errorf("restore failures IPv4 %v IPv6 %v, want 1 each", v4, v6)
	}
	fail = false
	h.mustSync(t)
	if again, _ := scrape(t, m).Value(name, map[string]string{"ip_family": "IPv4"}); again != 1 {
		t.Errorf("after a good sync: %v", again)
	}
}
