package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
)

// fullView is the node's whole proxy state in comparable form: every virtual server with
// its real servers and weights (connection counters dropped), and every KUBE-* set with
// its type and members (sizes dropped), one sorted line each.
func fullView(t *testing.T) []string {
	t.Helper()
	out, err := node.MustExec("ipvsadm -Ln; echo ===; ipset save")
	if err != nil {
		t.Fatal(err)
	}
	ipvs, sets, _ := strings.Cut(out, "===")
	var lines []string
	vs := ""
	for _, l := range strings.Split(ipvs, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && (f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP"):
			vs = strings.Join(f[:2], " ")
			lines = append(lines, "vs "+strings.Join(f, " "))
		case len(f) == 6 && f[0] == "->" && f[1] != "RemoteAddress:Port":
			lines = append(lines, "rs "+vs+" -> "+strings.Join(f[1:4], " "))
		}
	}
	for _, l := range strings.Split(sets, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || !strings.HasPrefix(f[1], "KUBE-") {
			continue
		}
		lines = append(lines, strings.Join(f[:3], " "))
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// deliberate reports whether a line differs from kube-proxy on purpose (README,
// "Differences from kube-proxy's IPVS mode").
func deliberate(line string) bool {
	for _, s := range []string{
		"KUBE-NO-ENDPOINTS",         // no-endpoint Services are REJECTed (kubernetes#78994)
		"KUBE-EXTERNAL-NO-LOCAL-EP", // ETP=Local without a local endpoint drops outside traffic
		"KUBE-6-",                   // we keep both families' sets; kube-proxy only its families'
		"KUBE-SERVICE-IPS",          // every Service's ClusterIP, for the unallocated-ClusterIP check
		" 169.254.",                 // no NodePorts on link-local addresses (the pods' veth gateway here)
	} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// TestDifferentialAgainstKubeProxy: for one cluster state with every Service shape, the
// node's IPVS table and ipset contents equal what stock kube-proxy (IPVS mode, same
// kernel, same apiserver objects) programs, except the deliberate differences.
func TestDifferentialAgainstKubeProxy(t *testing.T) {
	requireEnv(t)
	one := []podEP{{"10.244.0.13", "node-1"}}
	createService(t, service("diff-cip"), 80, v1.ProtocolTCP,
		podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
	createService(t, service("diff-udp"), 53, v1.ProtocolUDP, podEP{"10.244.0.11", "node-1"})
	createService(t, service("diff-np", v1.ServiceSpec{Type: v1.ServiceTypeNodePort}),
		80, v1.ProtocolTCP, one...)
	createService(t, service("diff-np-local", v1.ServiceSpec{Type: v1.ServiceTypeNodePort,
		ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal}), 80, v1.ProtocolTCP, one...)
	createService(t, service("diff-ext", v1.ServiceSpec{ExternalIPs: []string{"198.51.100.50"}}),
		80, v1.ProtocolTCP, one...)
	createService(t, service("diff-aff", v1.ServiceSpec{SessionAffinity: v1.ServiceAffinityClientIP}),
		80, v1.ProtocolTCP, one...)
	lb := createService(t, service("diff-lb", v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		LoadBalancerSourceRanges: []string{"192.168.50.0/24"}}), 80, v1.ProtocolTCP, one...)
	setLBIngress(t, lb, "203.0.113.50")
	createService(t, service("diff-empty"), 80, v1.ProtocolTCP)

	ours, theirs := compareWithKubeProxy(t, "203.0.113.50:80", nil)
	compareMetrics(t, ours, theirs)
}

// compareWithKubeProxy starts both proxies from a wiped node (so neither sees what
// earlier tests left, such as real servers still draining): ipvs-proxier first, its
// state read once it settles with want in it, then stock kube-proxy (IPVS mode) on the
// same objects. It fails on every difference but the deliberate ones; the node goes
// back to ipvs-proxier when the test ends.
//
// also, when not nil, marks more lines as deliberate for this state.
// It returns both proxies' /metrics as scraped once each state settled.
func compareWithKubeProxy(t *testing.T, want string, also func(line string) bool) (ours, theirs map[string]*dto.MetricFamily) {
	t.Helper()
	t.Cleanup(func() { restoreNode(t) })
	wipeNode(t)
	startDaemon(t)
	settled := func(want string) []string {
		t.Helper()
		// Settled: three equal views 2 s apart with want in them. kube-proxy applies
		// its Node's labels (zone hints) in a sync of its own after the first.
		var prev, cur []string
		stable := 0
		if err := waitFor(90*time.Second, func() bool {
			prev, cur = cur, fullView(t)
			time.Sleep(2 * time.Second)
			if slices.Equal(prev, cur) && slices.ContainsFunc(cur, func(l string) bool { return strings.Contains(l, want) }) {
				stable++
			} else {
				stable = 0
			}
			return stable >= 2
		}); err != nil {
			t.Fatalf("state never settled with %q:\n%s", want, strings.Join(cur, "\n"))
		}
		return cur
	}
	oursView := settled(want)
	ours = scrape(t)

	wipeNode(t)
	startKubeProxy(t, "ipvs")
	theirsView := settled(want)
	theirs = scrape(t)
	stopKubeProxy(t)

	allowedDiff := func(l string) bool { return deliberate(l) || also != nil && also(l) }
	onlyOurs, plus := linesOnlyIn(oursView, theirsView, allowedDiff)
	onlyTheirs, minus := linesOnlyIn(theirsView, oursView, allowedDiff)
	var allowed []string
	for _, l := range plus {
		allowed = append(allowed, "+ "+l)
	}
	for _, l := range minus {
		allowed = append(allowed, "- "+l)
	}
	t.Logf("compared %d lines of ours with %d of kube-proxy's; deliberate differences (+ ours only, - theirs only):\n%s",
		len(oursView), len(theirsView), strings.Join(allowed, "\n"))
	if len(onlyOurs)+len(onlyTheirs) > 0 {
		t.Errorf("differences from kube-proxy:\n--- only ipvs-proxier\n%s\n--- only kube-proxy\n%s",
			strings.Join(onlyOurs, "\n"), strings.Join(onlyTheirs, "\n"))
	}
	return ours, theirs
}

// linesOnlyIn returns the lines of a that b lacks, split into those allowed says are
// deliberate differences and the rest.
func linesOnlyIn(a, b []string, allowed func(string) bool) (unexpected, deliberate []string) {
	for _, l := range a {
		switch {
		case slices.Contains(b, l):
		case allowed(l):
			deliberate = append(deliberate, l)
		default:
			unexpected = append(unexpected, l)
		}
	}
	return unexpected, deliberate
}
