package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// scrape reads the daemon's /metrics inside the VM and parses it as Prometheus would.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	r, err := node.Get("", "http://127.0.0.1:10249/metrics")
	if err != nil || r.Code != 200 {
		t.Fatalf("scrape: %v %+v", err, r.Code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// metricValue returns the value of name's sample whose labels include want.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// countersLag bounds how long the per-VS counters take to show traffic: a syncPeriod
// (30 s) until the next full sync, its reads, and the kernel estimator's 2 s.
const countersLag = 45 * time.Second

// TestMetricsAndHealth: /metrics parses, the per-virtual-server counters rise with real
// traffic, and the health endpoints answer with kube-proxy's contract.
func TestMetricsAndHealth(t *testing.T) {
	requireEnv(t)
	svc, vip := createProgrammed(t, service("metered"), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	labels := map[string]string{"namespace": "default", "name": "metered", "vip": svc.Spec.ClusterIP, "port": "80", "protocol": "TCP"}
	// The per-VS counters are the last full sync's dump (syncPeriod 30 s in deploy/),
	// so a new virtual server's series appears within a syncPeriod and that sync.
	var fams map[string]*dto.MetricFamily
	var before float64
	ok := false
	_ = waitFor(countersLag, func() bool {
		fams = scrape(t)
		before, ok = metricValue(fams, "ipvs_connections_total", labels)
		return ok
	})
	if !ok {
		t.Fatalf("no ipvs_connections_total%v", labels)
	}
	for _, name := range []string{"kubeproxy_sync_proxy_rules_duration_seconds", "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		"kubeproxy_sync_proxy_rules_endpoint_changes_total", "kubeproxy_sync_proxy_rules_service_changes_total",
		"kubeproxy_network_programming_duration_seconds", "ipvs_proxier_virtual_servers", "ipvs_proxier_real_servers",
		"ipvs_proxier_ipset_entries", "ipvs_proxier_bound_addresses", "ipvs_proxier_conntrack_max"} {
		if v, ok := metricValue(fams, name, nil); !ok || v <= 0 {
			t.Errorf("%s = %v (present %v), want > 0", name, v, ok)
		}
	}
	if _, ok := metricValue(fams, "ipvs_proxier_conntrack_entries", nil); !ok {
		t.Error("no ipvs_proxier_conntrack_entries")
	}
	const n = 7
	for range n {
		if _, err := node.Ask("client", "tcp", vip); err != nil {
			t.Fatal(err)
		}
	}
	// The kernel folds its per-CPU counters into the totals every 2 s (the IPVS
	// estimator), and the next full sync's dump reads them.
	var after, in float64
	_ = waitFor(countersLag, func() bool {
		fams = scrape(t)
		after, _ = metricValue(fams, "ipvs_connections_total", labels)
		in, _ = metricValue(fams, "ipvs_incoming_packets_total", labels)
		return after-before >= n
	})
	if after-before != n || in == 0 {
		stats, _ := node.MustExec("ipvsadm -Ln --stats")
		t.Errorf("ipvs_connections_total went %v -> %v after %d connections (incoming packets %v)\n%s", before, after, n, in, stats)
	}

	for path, want := range map[string]int{"/healthz": 200, "/livez": 200, "/readyz": 200} {
		r, err := node.Get("", "http://127.0.0.1:10256"+path)
		if err != nil || r.Code != want || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %v %+v", path, err, r)
			continue
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil || (path != "/readyz" && body["healthy"] != true) {
			t.Errorf("%s body %q: %v", path, r.Body, err)
		}
	}
	if r, err := node.Get("", "http://127.0.0.1:10249/proxyMode"); err != nil || r.Body != "ipvs" {
		t.Errorf("/proxyMode: %v %+v", err, r)
	}
	out, err := node.MustExec("/usr/local/bin/ipvs-proxier status")
	if err != nil || !strings.Contains(out, "healthy, ready") || !strings.Contains(out, "conntrack:") {
		t.Errorf("ipvs-proxier status: %v\n%s", err, out)
	}
	t.Logf("ipvs-proxier status in the VM:\n%s", out)
}

// TestHealthCheckNodePort: an ETP=Local LoadBalancer's healthCheckNodePort answers 200
// with a local endpoint and 503 with only a remote one, with kube-proxy's body and headers.
func TestHealthCheckNodePort(t *testing.T) {
	requireEnv(t)
	ctx := context.Background()
	svc := createService(t, service("hc-lb", v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal}), 80, v1.ProtocolTCP, podEP{"10.244.0.12", "node-1"})
	setLBIngress(t, svc, "203.0.113.30")
	if svc.Spec.HealthCheckNodePort == 0 {
		t.Fatal("the apiserver allocated no healthCheckNodePort")
	}
	url := fmt.Sprintf("http://%s:%d/", harness.NodeIP, svc.Spec.HealthCheckNodePort)
	type hcBody struct {
		Service             struct{ Namespace, Name string }
		LocalEndpoints      int
		ServiceProxyHealthy bool
	}
	expect := func(what string, code, local int) {
		t.Helper()
		var last harness.HTTPResult
		var lastErr error
		err := waitFor(15*time.Second, func() bool {
			last, lastErr = node.Get("client", url) // from outside the node, as a load balancer probes
			return lastErr == nil && last.Code == code
		})
		if err != nil {
			t.Fatalf("%s: want %d, got %+v %v", what, code, last, lastErr)
		}
		var b hcBody
		if err := json.Unmarshal([]byte(last.Body), &b); err != nil {
			t.Fatalf("%s: body %q: %v", what, last.Body, err)
		}
		if b.Service.Namespace != "default" || b.Service.Name != "hc-lb" || b.LocalEndpoints != local || !b.ServiceProxyHealthy ||
			last.Header.Get("X-Load-Balancing-Endpoint-Weight") != strconv.Itoa(local) ||
			last.Header.Get("Content-Type") != "application/json" || last.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %+v", what, last)
		}
	}
	expect("one local endpoint", 200, 1)
	setEndpoints(t, "hc-lb", 80, v1.ProtocolTCP, podEP{"10.244.0.12", "node-2"})
	expect("only a remote endpoint", 503, 0)
	setEndpoints(t, "hc-lb", 80, v1.ProtocolTCP, podEP{"10.244.0.12", "node-1"}, podEP{"10.244.0.13", "node-1"}, podEP{"10.9.9.9", "node-2"})
	expect("two local endpoints", 200, 2)
	if err := cp.Admin.CoreV1().Services("default").Delete(ctx, "hc-lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(15*time.Second, func() bool { _, err := node.Get("client", url); return err != nil }); err != nil {
		t.Error("the healthCheckNodePort still answers after the Service was deleted")
	}
}

// nodeEvent waits for an Event with reason on node-1's Node, stamped at or after after
// (a time of node-1's clock: nodeNow).
func nodeEvent(t *testing.T, reason string, after time.Time) (*v1.Event, error) {
	t.Helper()
	var found *v1.Event
	err := waitFor(60*time.Second, func() bool {
		evs, err := cp.Admin.CoreV1().Events("").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node.Name + ",reason=" + reason})
		if err != nil {
			return false
		}
		for i, e := range evs.Items {
			if !e.LastTimestamp.Time.Before(after.Truncate(time.Second)) {
				found = &evs.Items[i]
				return true
			}
		}
		return false
	})
	return found, err
}

// lingeringFlows deletes the node's conntrack entries that expire on their own: TCP
// flows in any state but ESTABLISHED, and UDP flows. conntrack -D exits 1 when nothing
// matched, so each is allowed to fail.
const lingeringFlows = "for s in SYN_SENT SYN_RECV FIN_WAIT CLOSE_WAIT LAST_ACK TIME_WAIT CLOSE; do " +
	"conntrack -D -p tcp --state $s >/dev/null 2>&1; done; conntrack -D -p udp >/dev/null 2>&1; true"

// TestConntrackPressure: shrink nf_conntrack_max, hold connections until usage passes the
// threshold, and see the metric and a Warning Event on the Node; close them and see the
// Normal Event.
func TestConntrackPressure(t *testing.T) {
	requireEnv(t)
	_, vip := createProgrammed(t, service("ct-fill"), 80, v1.ProtocolTCP, podEP{"10.244.0.13", "node-1"})
	const ct = "/proc/sys/net/netfilter/"
	orig, err := node.MustExec("cat " + ct + "nf_conntrack_max " + ct + "nf_conntrack_tcp_timeout_time_wait")
	if err != nil {
		t.Fatal(err)
	}
	o := strings.Fields(orig)
	t.Cleanup(func() {
		_ = node.Release()
		_, _ = node.MustExec(fmt.Sprintf("echo %s > %snf_conntrack_max; echo %s > %snf_conntrack_tcp_timeout_time_wait", o[0], ct, o[1], ct))
	})
	// Closed connections linger in TIME_WAIT for 120 s by default; shorten it so the
	// table empties soon after the connections close. The sysctl applies to new
	// transitions only: the earlier tests' closing and closed flows keep their timers and
	// would expire during the hold (CI once counted 893 at the start, the usage then fell
	// under the threshold), so they are deleted first; established flows stay.
	if _, err := node.MustExec("echo 2 > " + ct + "nf_conntrack_tcp_timeout_time_wait; " + lingeringFlows + "; sleep 3"); err != nil {
		t.Fatal(err)
	}
	out, _ := node.MustExec("cat " + ct + "nf_conntrack_count")
	base, _ := strconv.Atoi(strings.TrimSpace(out))
	t.Logf("conntrack entries at the start: %d", base)
	max := base + 100
	start := nodeNow(t)
	if _, err := node.MustExec(fmt.Sprintf("echo %d > %snf_conntrack_max", max, ct)); err != nil {
		t.Fatal(err)
	}
	if err := node.Hold("client", vip, 90); err != nil {
		t.Fatal(err)
	}
	ev, err := nodeEvent(t, "ConntrackTablePressure", start)
	if err != nil {
		out, _ := node.MustExec("cat " + ct + "nf_conntrack_count")
		t.Fatalf("no ConntrackTablePressure Event on the Node (base %d, max %d, count now %s)", base, max, strings.TrimSpace(out))
	}
	if ev.Type != v1.EventTypeWarning || !strings.Contains(ev.Message, "nf_conntrack_max") || !strings.Contains(ev.Message, fmt.Sprintf("of %d entries", max)) {
		t.Errorf("event %s %q", ev.Type, ev.Message)
	}
	fams := scrape(t)
	p, _ := metricValue(fams, "ipvs_proxier_conntrack_pressure", nil)
	usage, _ := metricValue(fams, "ipvs_proxier_conntrack_usage_ratio", nil)
	m, _ := metricValue(fams, "ipvs_proxier_conntrack_max", nil)
	if p != 1 || usage < 0.8 || m != float64(max) {
		t.Errorf("metrics: pressure %v usage %v max %v (want 1, >= 0.8, %d)", p, usage, m, max)
	}
	t.Logf("pressure event: %s", ev.Message)
	if err := node.Release(); err != nil {
		t.Fatal(err)
	}
	released := nodeNow(t)
	if ev, err = nodeEvent(t, "ConntrackTablePressureResolved", released); err != nil {
		out, _ := node.MustExec("cat " + ct + "nf_conntrack_count")
		t.Fatalf("no ConntrackTablePressureResolved Event after the connections closed (count now %s)", out)
	}
	if ev.Type != v1.EventTypeNormal {
		t.Errorf("resolved event type %s", ev.Type)
	}
	t.Logf("resolved event %v after release: %s", time.Since(released).Round(time.Second), ev.Message)
}

// TestHealthListenerFromTheNetwork: from another host (the client netns, through the
// node's address on its link), the health listener answers kube-proxy's health paths and
// nothing else: /status, /proxyMode and /metrics are not there, and /readyz names no
// server. /status answers on the metrics listener, on the node's loopback.
func TestHealthListenerFromTheNetwork(t *testing.T) {
	requireEnv(t)
	const base = "http://192.168.50.1:10256"
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if r, err := node.Get("client", base+path); err != nil || r.Code != 200 || strings.Contains(r.Body, "https://") {
			t.Errorf("%s from the client: %v %+v", path, err, r)
		}
	}
	for _, path := range []string{"/status", "/proxyMode", "/metrics", "/", "/debug/pprof/", "/configz"} {
		if r, err := node.Get("client", base+path); err != nil || r.Code != 404 {
			t.Errorf("%s from the client: %v %+v, want 404", path, err, r)
		}
	}
	if r, err := node.Get("", "http://127.0.0.1:10249/status"); err != nil || r.Code != 200 || !strings.Contains(r.Body, `"apiServer"`) {
		t.Errorf("/status on the metrics listener: %v %+v", err, r)
	}
}
