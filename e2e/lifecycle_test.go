package e2e

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestSCTPClusterIP: an SCTP ClusterIP through the apiserver, balanced over two pods.
func TestSCTPClusterIP(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("web-sctp"), 80, v1.ProtocolSCTP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	vip := svc.Spec.ClusterIP + ":80"
	waitIPVS(t, "SCTP virtual server", func(s string) bool {
		return strings.Contains(s, "SCTP "+vip) && strings.Contains(vsBlock(s, vip), "10.244.0.12:80")
	})
	if got := answers(t, "client", "sctp", vip, 6); !slices.Equal(got, []string{"pod1", "pod2"}) {
		t.Errorf("SCTP answers %v", got)
	}
}

// TestUDPEndpointReplacement: a UDP client keeps its source port while the Service's
// only endpoint is replaced; its next datagram reaches the new pod (stale conntrack and
// IPVS entries are flushed, kube-proxy's UDP blackhole does not happen).
func TestUDPEndpointReplacement(t *testing.T) {
	requireEnv(t)
	svc, vip := createProgrammed(t, service("dns-like"), 53, v1.ProtocolUDP, podEP{"10.244.0.11", "node-1"})
	const src = "192.168.50.2:40053"
	for range 3 { // a live flow: the same 5-tuple each time
		if a, err := node.AskFrom("client", "udp", src, vip); err != nil || !strings.HasPrefix(a, "pod1") {
			t.Fatalf("before: %q %v", a, err)
		}
	}
	stale := "conntrack -L -p udp --orig-dst " + svc.Spec.ClusterIP + " --reply-src 10.244.0.11 2>/dev/null | grep -c 'dport=53' || true"
	if out, _ := node.MustExec(stale); strings.TrimSpace(out) == "0" {
		t.Fatal("no conntrack entry for the flow before the change; the check below would prove nothing")
	}
	setEndpoints(t, "dns-like", 53, v1.ProtocolUDP, podEP{"10.244.0.12", "node-1"})
	waitIPVS(t, "replaced", func(s string) bool {
		b := vsBlock(s, vip)
		return strings.Contains(b, "10.244.0.12:53") && !strings.Contains(b, "10.244.0.11:53")
	})
	// The old flow's conntrack entry is gone, not left to time out (kubernetes#125467).
	// On 5.9+ kernels IPVS itself expires a deleted destination's connections and their
	// conntrack entries (expire_nodest_conn=1, which the daemon sets); the daemon's own
	// filtered flush covers older kernels, and sync/reconcile/sync_test.go checks it is called.
	if err := waitFor(3*time.Second, func() bool { out, _ := node.MustExec(stale); return strings.TrimSpace(out) == "0" }); err != nil {
		out, _ := node.MustExec("conntrack -L -p udp --orig-dst " + svc.Spec.ClusterIP)
		t.Errorf("stale conntrack entries to the removed endpoint:\n%s", out)
	}
	var a string
	var err error
	if werr := waitFor(3*time.Second, func() bool { a, err = node.AskFrom("client", "udp", src, vip); return err == nil }); werr != nil {
		t.Fatalf("the same UDP flow is blackholed after the endpoint changed: %v", err)
	}
	if !strings.HasPrefix(a, "pod2") {
		t.Errorf("after the replacement the flow reached %q, want pod2", a)
	}
}

// TestUDPScaleFromZero: a UDP stream runs while its Service has no endpoints (each
// datagram is refused), then an endpoint appears; the same 5-tuple reaches it at once
// (kubernetes#139628: a stale entry made during zero endpoints blackholed a stream for 13 h).
func TestUDPScaleFromZero(t *testing.T) {
	requireEnv(t)
	svc, vip := createProgrammed(t, service("statsd"), 53, v1.ProtocolUDP)
	const src = "192.168.50.2:40054"
	for range 3 {
		if a, err := node.AskFrom("client", "udp", src, vip); err == nil {
			t.Fatalf("a Service without endpoints answered %q", a)
		}
	}
	setEndpoints(t, "statsd", 53, v1.ProtocolUDP, podEP{"10.244.0.13", "node-1"})
	waitIPVS(t, "endpoint", func(s string) bool { return strings.Contains(vsBlock(s, vip), "10.244.0.13:53") })
	var a string
	var err error
	if werr := waitFor(3*time.Second, func() bool { a, err = node.AskFrom("client", "udp", src, vip); return err == nil }); werr != nil {
		out, _ := node.MustExec("conntrack -L -p udp --orig-dst " + svc.Spec.ClusterIP)
		t.Fatalf("the UDP stream is blackholed after the Service got an endpoint: %v\n%s", err, out)
	}
	if !strings.HasPrefix(a, "pod3") {
		t.Errorf("answer %q, want pod3", a)
	}
}

// TestGracefulTerminationAPI: an open TCP connection survives the removal of its
// endpoint from the EndpointSlice; the endpoint drains at weight 0 and new connections go
// to the other pod.
func TestGracefulTerminationAPI(t *testing.T) {
	requireEnv(t)
	_, vip := createProgrammed(t, service("drain"), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	greet, err := node.HoldGreeted("client", vip, 1)
	if err != nil || len(greet) != 1 || !strings.HasPrefix(greet[0], "pod1") {
		t.Fatalf("hold: %v %v", greet, err)
	}
	t.Cleanup(func() { _ = node.Release() })
	setEndpoints(t, "drain", 80, v1.ProtocolTCP, podEP{"10.244.0.12", "node-1"})
	waitIPVS(t, "draining", func(s string) bool {
		b := vsBlock(s, vip)
		return strings.Contains(b, "10.244.0.12:80               Masq    1") && strings.Contains(b, "10.244.0.11:80               Masq    0")
	})
	if err := node.CheckHeld(); err != nil {
		t.Errorf("the open connection to the removed endpoint broke: %v", err)
	}
	if got := answers(t, "client", "tcp", vip, 4); !slices.Equal(got, []string{"pod2"}) {
		t.Errorf("new connections went to %v, want pod2 only", got)
	}
	time.Sleep(6 * time.Second) // a drain tick and a sync later, the connection still lives
	if err := node.CheckHeld(); err != nil {
		t.Errorf("the open connection broke while draining: %v", err)
	}
}

type epState struct {
	ip                          string
	ready, serving, terminating bool
}

// setSliceStates writes the Service's slice with explicit endpoint conditions.
func setSliceStates(t *testing.T, name string, eps ...epState) {
	t.Helper()
	ctx := context.Background()
	sl, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Get(ctx, name+"-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sl.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}
	sl.Endpoints = nil
	for _, e := range eps {
		sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{Addresses: []string{e.ip}, NodeName: ptr.To("node-1"),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating)}})
	}
	if _, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// activeRS returns the real servers of vip with weight > 0.
func activeRS(out, vip string) []string {
	var rs []string
	for _, l := range strings.Split(vsBlock(out, vip), "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && f[3] != "0" {
			rs = append(rs, strings.Split(f[1], ":")[0])
		}
	}
	sort.Strings(rs)
	return rs
}

// TestReadinessAndTerminatingChurn: readiness flips and terminating endpoints, as the
// EndpointSlice controller reports them, each reflected in IPVS within minSyncPeriod
// (1 s) + 1 s. Serving-but-terminating endpoints are used only when nothing is ready
// (kube-proxy's rule, KEP-1669).
func TestReadinessAndTerminatingChurn(t *testing.T) {
	requireEnv(t)
	_, vip := createProgrammed(t, service("flappy"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	const a, b, c = "10.244.0.11", "10.244.0.12", "10.244.0.13"
	ready := func(ip string) epState { return epState{ip, true, true, false} }
	notReady := func(ip string) epState { return epState{ip, false, false, false} }
	terminating := func(ip string) epState { return epState{ip, false, true, true} }
	steps := []struct {
		name string
		eps  []epState
		want []string
	}{
		{"b not ready", []epState{ready(a), notReady(b)}, []string{a}},
		{"b ready again", []epState{ready(a), ready(b)}, []string{a, b}},
		{"a terminating, b ready", []epState{terminating(a), ready(b)}, []string{b}},
		{"both terminating: serving fallback", []epState{terminating(a), terminating(b)}, []string{a, b}},
		{"c ready: terminating ones drop out", []epState{terminating(a), terminating(b), ready(c)}, []string{c}},
		{"all not ready", []epState{notReady(a), notReady(b), notReady(c)}, nil},
		{"a ready", []epState{ready(a)}, []string{a}},
	}
	var lat []time.Duration
	for round := range 3 {
		for _, st := range steps {
			start := time.Now()
			setSliceStates(t, "flappy", st.eps...)
			var last string
			if err := waitFor(10*time.Second, func() bool { last = ipvsadm(t); return slices.Equal(activeRS(last, vip), st.want) }); err != nil {
				t.Fatalf("round %d, %s: want active %v, have %v\n%s", round, st.name, st.want, activeRS(last, vip), last)
			}
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	t.Logf("readiness/terminating change -> ipvsadm over %d changes: min %v p50 %v p90 %v max %v",
		len(lat), lat[0], lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)-1])
	if lat[len(lat)*9/10] > 2*time.Second {
		t.Errorf("p90 latency %v above minSyncPeriod + 1 s", lat[len(lat)*9/10])
	}
}
