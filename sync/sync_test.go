package sync

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestGoldenBasic: the whole kernel state after one sync of testdata/basic.yaml.
func TestGoldenBasic(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	golden(t, "basic.golden", h.fake.Dump())
}

func svc(ns, name, ip string, port int32, proto v1.Protocol) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}, Ports: []v1.ServicePort{{Name: "p", Port: port, Protocol: proto}}}}
}

func slice(ns, svcName, name string, port int32, proto v1.Protocol, ips ...string) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discovery.LabelServiceName: svcName}},
		AddressType: discovery.AddressTypeIPv4, Ports: []discovery.EndpointPort{{Name: ptr.To("p"), Port: ptr.To(port), Protocol: ptr.To(proto)}}}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{ip}, NodeName: ptr.To("other-node")})
	}
	return s
}

// addServices loads n Services with 4 endpoints each.
func addServices(h *harness, n int) {
	for i := range n {
		ip := fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256)
		name := fmt.Sprintf("svc-%d", i)
		h.src.SetService(svc("bench", name, ip, 80, v1.ProtocolTCP))
		var eps []string
		for j := range 4 {
			eps = append(eps, fmt.Sprintf("10.%d.%d.%d", 128+j*16+i/65536, (i/256)%256, i%256))
		}
		h.src.SetSlice(slice("bench", name, name+"-1", 8080, v1.ProtocolTCP, eps...))
	}
}

// TestIncrementalCostIsFlat: one endpoint change costs the same kernel calls with 1 and
// with 10,000 Services programmed, and the partial sync reads nothing from the kernel.
func TestIncrementalCostIsFlat(t *testing.T) {
	var got []map[string]int
	for _, n := range []int{1, 10000} {
		h := newHarness(t, kernel.Kernel{}, nil)
		addServices(h, n)
		h.mustSync(t)
		h.fake.ResetOps()
		k, _ := h.src.SetSlice(slice("bench", "svc-0", "svc-0-1", 8080, v1.ProtocolTCP, "10.128.0.0", "10.144.0.0", "10.160.0.0", "10.176.0.0", "10.200.0.1"))
		h.tracker.ServiceChanged(k)
		h.mustSync(t)
		got = append(got, h.fake.Ops())
	}
	want := map[string]int{"AddRealServer": 1}
	for i, ops := range got {
		if !reflect.DeepEqual(ops, want) {
			t.Errorf("run %d: ops %v, want %v", i, ops, want)
		}
	}
}

// TestOperationCounts: the minimum calls for common changes.
func TestOperationCounts(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	addServices(h, 3)
	h.mustSync(t)
	step := func(name string, want map[string]int, change func()) {
		t.Helper()
		h.fake.ResetOps()
		change()
		h.mustSync(t)
		if got := h.fake.Ops(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ops %v, want %v", name, got, want)
		}
	}
	step("no change", map[string]int{}, func() { h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "bench", Name: "svc-1"}) })
	step("new service", map[string]int{"AddVirtualServer": 1, "AddRealServer": 1, "BindAddress": 1, "AddEntry": 3}, func() { // KUBE-CLUSTER-IP, KUBE-IPVS-IPS, KUBE-SERVICE-IPS
		h.tracker.ServiceChanged(h.src.SetService(svc("bench", "new", "10.99.0.1", 80, v1.ProtocolTCP)))
		h.src.SetSlice(slice("bench", "new", "new-1", 80, v1.ProtocolTCP, "10.1.1.1"))
	})
	step("scale to zero", map[string]int{"DeleteRealServer": 1, "ListRealServers": 1, "AddEntry": 1}, func() {
		h.src.SetSlice(slice("bench", "new", "new-1", 80, v1.ProtocolTCP))
		h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "bench", Name: "new"})
	})
	step("delete service", map[string]int{"DeleteVirtualServer": 1, "UnbindAddress": 1, "DelEntry": 4}, func() {
		h.src.DeleteService(proxier.ServiceKey{Namespace: "bench", Name: "new"})
		h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "bench", Name: "new"})
	})
}

// TestFaultInjection: with 10% of kernel operations failing, syncs converge to the same
// state as a clean run within a few retries.
func TestFaultInjection(t *testing.T) {
	clean := newHarness(t, kernel.Kernel{}, nil)
	clean.load(t, "testdata/basic.yaml")
	addServices(clean, 200)
	clean.mustSync(t)
	want := clean.fake.Dump()
	cleanVS, _ := clean.fake.ListVirtualServers()

	for seed := range uint64(5) {
		fake := kernel.NewFake()
		faulty := kernel.NewFaulty(fake.Kernel(), 0.10, seed)
		h := newHarness(t, faulty.Kernel(), fake)
		h.load(t, "testdata/basic.yaml")
		addServices(h, 200)
		converged := false
		for try := 0; try < 30 && !converged; try++ {
			converged = h.syncer.Sync() == nil
		}
		if !converged {
			t.Fatalf("seed %d: no clean sync in 30 tries", seed)
		}
		faulty.SetRate(0)
		if got := fake.Dump(); got != want {
			t.Errorf("seed %d: state differs from clean run after %d injected faults:\n%s", seed, faulty.Injected, diffLines(got, want))
		}
		// One more clean full sync proves the syncer's belief converged too: it re-reads
		// the kernel and finds nothing to write.
		fake.ResetOps()
		h.tracker.AllChanged()
		h.mustSync(t)
		if m := mutations(fake.Ops()); len(m) != 0 {
			t.Errorf("seed %d: the clean full sync after convergence wrote %v", seed, m)
		}
		// Churn under faults: delete half, then converge again.
		faulty.SetRate(0.10)
		for i := range 100 {
			k := proxier.ServiceKey{Namespace: "bench", Name: fmt.Sprintf("svc-%d", i)}
			h.src.DeleteService(k)
			h.tracker.ServiceChanged(k)
		}
		for try := 0; try < 30 && h.syncer.Sync() != nil; try++ {
		}
		faulty.SetRate(0)
		h.mustSync(t)
		if vs, _ := fake.ListVirtualServers(); len(vs) != len(cleanVS)-100 {
			t.Errorf("seed %d: %d virtual servers after deleting 100, want %d", seed, len(vs), len(cleanVS)-100)
		}
	}
}

func diffLines(a, b string) string {
	am, bm := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(a, "\n") {
		am[l] = true
	}
	for _, l := range strings.Split(b, "\n") {
		bm[l] = true
	}
	var out []string
	for l := range am {
		if !bm[l] {
			out = append(out, "+ "+l)
		}
	}
	for l := range bm {
		if !am[l] {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRestartAdoptsState: a new syncer over a programmed kernel changes nothing.
func TestRestartAdoptsState(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	before := h.fake.Dump()
	h2 := newHarness(t, kernel.Kernel{}, h.fake)
	h2.load(t, "testdata/basic.yaml")
	h.fake.ResetOps()
	h2.mustSync(t)
	if m := mutations(h.fake.Ops()); len(m) != 0 {
		t.Errorf("restart made changes: %v", m)
	}
	if h.fake.Dump() != before {
		t.Error("state changed across restart")
	}
}

// TestRestartRestoresWeights: real servers left at weight 0 by a previous run are put
// back to weight 1 when wanted (kubernetes#92019).
func TestRestartRestoresWeights(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	h.src.SetService(svc("ns", "a", "10.96.0.1", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "a", "a-1", 80, v1.ProtocolTCP, "10.1.0.1"))
	h.mustSync(t)
	key := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 80}
	must(t, h.fake.UpdateRealServer(key, kernel.RealServer{Address: netip.MustParseAddr("10.1.0.1"), Port: 80, Weight: 0}))
	h2 := newHarness(t, kernel.Kernel{}, h.fake)
	h2.src = h.src
	h2.syncer.src = h.src
	h2.mustSync(t)
	rss, _ := h.fake.ListRealServers(key)
	if len(rss) != 1 || rss[0].Weight != 1 {
		t.Errorf("real servers %v, want weight 1", rss)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDriftRepair: hand-made damage (ipvsadm -C, ipset flush, ip addr del, iptables
// flush) is repaired by the next full sync.
func TestDriftRepair(t *testing.T) {
	now := time.Now()
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.Now = func() time.Time { return now } })
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	want := h.fake.Dump()
	vss, _ := h.fake.ListVirtualServers()
	for _, vs := range vss {
		must(t, h.fake.DeleteVirtualServer(vs.VSKey))
	}
	h.fake.FlushSet("KUBE-CLUSTER-IP")
	must(t, h.fake.UnbindAddress("kube-ipvs0", netip.MustParseAddr("10.96.0.10")))
	must(t, h.fake.Restore(kernel.IPv4, ""))
	h.mustSync(t) // partial: nothing changed in the API, nothing noticed
	now = now.Add(31 * time.Second)
	h.mustSync(t) // full
	if got := h.fake.Dump(); got != want {
		t.Errorf("drift not repaired:\n%s", diffLines(got, want))
	}
}

// TestPruneOnlyOurs: a full sync removes stale virtual servers on our addresses but
// never someone else's, nor those in --ipvs-exclude-cidrs.
func TestPruneOnlyOurs(t *testing.T) {
	fake := kernel.NewFake()
	must(t, fake.EnsureDummy("kube-ipvs0"))
	mk := func(ip string, port uint16) kernel.VSKey {
		k := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr(ip), Port: port}
		must(t, fake.AddVirtualServer(kernel.VirtualServer{VSKey: k, Scheduler: "rr"}))
		return k
	}
	stale := mk("10.96.9.9", 80) // bound on kube-ipvs0 by an earlier run
	must(t, fake.BindAddress("kube-ipvs0", stale.Address))
	excluded := mk("3.3.3.3", 80)
	must(t, fake.BindAddress("kube-ipvs0", excluded.Address))
	foreign := mk("5.5.5.5", 99)                  // keepalived's, say
	staleNodePort := mk("100.101.102.103", 30001) // our old NodePort
	foreignOnNode := mk("100.101.102.103", 80)    // a node-IP service outside the NodePort range
	h := newHarness(t, kernel.Kernel{}, fake, func(o *Options) { o.ExcludeCIDRs = []netip.Prefix{netip.MustParsePrefix("3.3.3.0/24")} })
	h.load(t, "testdata/basic.yaml")
	h.mustSync(t)
	present := map[kernel.VSKey]bool{}
	vss, _ := fake.ListVirtualServers()
	for _, vs := range vss {
		present[vs.VSKey] = true
	}
	for k, want := range map[kernel.VSKey]bool{stale: false, staleNodePort: false, excluded: true, foreign: true, foreignOnNode: true} {
		if present[k] != want {
			t.Errorf("%s present=%v, want %v", k, present[k], want)
		}
	}
	if addrs, _ := fake.ListAddresses("kube-ipvs0"); contains(addrs, stale.Address) {
		t.Errorf("stale address %s still bound", stale.Address)
	}
}

func contains(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}

// TestNothingBeforeInformersSync: no kernel call until the source has synced.
func TestNothingBeforeInformersSync(t *testing.T) {
	fake := kernel.NewFake()
	src := &unsyncedSource{StaticSource: NewStaticSource()}
	s := NewSyncer(Options{Config: proxier.Config{NodeName: testNode}}, fake.Kernel(), src, NewTracker(nil))
	if err := s.Sync(); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("err %v, want ErrNotSynced", err)
	}
	if ops := fake.Ops(); len(ops) != 0 {
		t.Errorf("kernel touched before sync: %v", ops)
	}
}

type unsyncedSource struct{ *StaticSource }

func (unsyncedSource) HasSynced() bool { return false }

// TestGracefulTermination covers real-server removal: TCP with connections
// drains at weight 0 and is reaped when they end or the timeout passes; one that comes
// back is restored in place; UDP goes at once with its conntrack flows.
func TestGracefulTermination(t *testing.T) {
	now := time.Now()
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
		o.Now = func() time.Time { return now }
		o.GracefulTimeout = time.Minute
		o.SyncPeriod = time.Hour
	})
	h.src.SetService(svc("ns", "t", "10.96.0.1", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "t", "t-1", 80, v1.ProtocolTCP, "10.1.0.1", "10.1.0.2"))
	h.src.SetService(svc("ns", "u", "10.96.0.2", 53, v1.ProtocolUDP))
	h.src.SetSlice(slice("ns", "u", "u-1", 53, v1.ProtocolUDP, "10.2.0.1", "10.2.0.2"))
	h.mustSync(t)
	tk := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 80}
	uk := kernel.VSKey{Protocol: kernel.UDP, Address: netip.MustParseAddr("10.96.0.2"), Port: 53}
	ap := netip.MustParseAddrPort
	h.fake.SetConnections(tk, ap("10.1.0.2:80"), 3, 1)
	h.fake.SetConnections(uk, ap("10.2.0.2:53"), 0, 5)
	h.fake.AddFlow(ap("10.96.0.2:53"), ap("10.2.0.2:53"))
	h.fake.AddFlow(ap("10.96.0.2:53"), ap("10.2.0.1:53"))

	weights := func(k kernel.VSKey) map[string]int {
		rss, _ := h.fake.ListRealServers(k)
		out := map[string]int{}
		for _, r := range rss {
			out[r.AddrPort().String()] = r.Weight
		}
		return out
	}
	// Remove .2 from both.
	h.src.SetSlice(slice("ns", "t", "t-1", 80, v1.ProtocolTCP, "10.1.0.1"))
	h.src.SetSlice(slice("ns", "u", "u-1", 53, v1.ProtocolUDP, "10.2.0.1"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "t"})
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "u"})
	h.mustSync(t)
	if w := weights(tk); !maps.Equal(w, map[string]int{"10.1.0.1:80": 1, "10.1.0.2:80": 0}) {
		t.Errorf("tcp after removal: %v", w)
	}
	if w := weights(uk); !maps.Equal(w, map[string]int{"10.2.0.1:53": 1}) {
		t.Errorf("udp after removal: %v", w)
	}
	if f := h.fake.Flows(); !reflect.DeepEqual(f, []string{"10.96.0.2:53>10.2.0.1:53"}) {
		t.Errorf("conntrack flows %v", f)
	}
	if h.syncer.Draining() != 1 {
		t.Errorf("draining %d", h.syncer.Draining())
	}

	// It comes back: restored in place, weight 1, not re-created.
	h.src.SetSlice(slice("ns", "t", "t-1", 80, v1.ProtocolTCP, "10.1.0.1", "10.1.0.2"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "t"})
	h.fake.ResetOps()
	h.mustSync(t)
	if ops := mutations(h.fake.Ops()); !reflect.DeepEqual(ops, map[string]int{"UpdateRealServer": 1}) {
		t.Errorf("restore ops %v", ops)
	}
	if rss, _ := h.fake.ListRealServers(tk); len(rss) != 2 || rss[0].Connections()+rss[1].Connections() != 4 {
		t.Errorf("connections lost on restore: %v", rss)
	}

	// Removed again; connections end; reaped at the next sync.
	h.src.SetSlice(slice("ns", "t", "t-1", 80, v1.ProtocolTCP, "10.1.0.1"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "t"})
	h.mustSync(t)
	h.mustSync(t)
	if len(weights(tk)) != 2 {
		t.Fatal("reaped while connections remain")
	}
	h.fake.SetConnections(tk, ap("10.1.0.2:80"), 0, 0)
	h.mustSync(t)
	if w := weights(tk); len(w) != 1 || h.syncer.Draining() != 0 {
		t.Errorf("not reaped after connections ended: %v", w)
	}

	// Timeout: a stuck connection is cut after GracefulTimeout.
	h.src.SetSlice(slice("ns", "t", "t-1", 80, v1.ProtocolTCP, "10.1.0.1", "10.1.0.3"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "t"})
	h.mustSync(t)
	h.fake.SetConnections(tk, ap("10.1.0.3:80"), 1, 0)
	h.src.SetSlice(slice("ns", "t", "t-1", 80, v1.ProtocolTCP, "10.1.0.1"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "t"})
	h.mustSync(t)
	now = now.Add(59 * time.Second)
	h.mustSync(t)
	if len(weights(tk)) != 2 {
		t.Fatal("reaped before the timeout")
	}
	now = now.Add(2 * time.Second)
	h.mustSync(t)
	if len(weights(tk)) != 1 {
		t.Error("not reaped after the timeout")
	}
}

// TestScaleToZeroAndDeleteClearUDP: a UDP Service losing all endpoints, or deleted,
// loses its conntrack flows (kubernetes#139628, #141371).
func TestScaleToZeroAndDeleteClearUDP(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil)
	h.src.SetService(svc("ns", "u", "10.96.0.2", 53, v1.ProtocolUDP))
	h.src.SetSlice(slice("ns", "u", "u-1", 53, v1.ProtocolUDP, "10.2.0.1"))
	h.mustSync(t)
	ap := netip.MustParseAddrPort
	h.fake.AddFlow(ap("10.96.0.2:53"), ap("10.2.0.1:53"))
	h.fake.AddFlow(ap("10.96.0.9:53"), ap("10.2.0.1:53")) // another service's flow
	h.src.SetSlice(slice("ns", "u", "u-1", 53, v1.ProtocolUDP))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "u"})
	h.mustSync(t)
	if f := h.fake.Flows(); !reflect.DeepEqual(f, []string{"10.96.0.9:53>10.2.0.1:53"}) {
		t.Errorf("after scale to zero: %v", f)
	}
	h.fake.AddFlow(ap("10.96.0.2:53"), ap("10.2.0.7:53"))
	h.src.DeleteService(proxier.ServiceKey{Namespace: "ns", Name: "u"})
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "u"})
	h.mustSync(t)
	if f := h.fake.Flows(); !reflect.DeepEqual(f, []string{"10.96.0.9:53>10.2.0.1:53"}) {
		t.Errorf("after delete: %v", f)
	}
}

// TestBadServiceDoesNotHurtOthers: a Service whose scheduler the kernel cannot load
// fails alone; the others stay programmed, and one Event is sent however many syncs.
func TestBadServiceDoesNotHurtOthers(t *testing.T) {
	sink := &recordingSink{}
	fake := kernel.NewFake()
	fake.KnownSchedulers = []string{"rr", "sh"} // the kernel lacks ip_vs_sed
	h := newHarness(t, kernel.Kernel{}, fake, func(o *Options) { o.Events = sink })
	h.load(t, "testdata/basic.yaml")
	bad := svc("ns", "bad", "10.96.5.5", 80, v1.ProtocolTCP)
	bad.Annotations = map[string]string{proxier.AnnotationScheduler: "sed"}
	h.src.SetService(bad)
	weird := svc("ns", "weird", "10.96.5.6", 80, v1.ProtocolTCP)
	weird.Annotations = map[string]string{proxier.AnnotationScheduler: "nonsense"}
	h.src.SetService(weird)
	for range 3 {
		_ = h.syncer.Sync()
	}
	vss, _ := fake.ListVirtualServers()
	if len(vss) < 10 {
		t.Errorf("only %d virtual servers programmed", len(vss))
	}
	found := false
	for _, vs := range vss {
		found = found || vs.Address.String() == "10.96.5.6"
	}
	if !found {
		t.Error("service with an invalid annotation not programmed with the default scheduler")
	}
	if len(sink.got) != 1 || sink.got[0].Reason != "InvalidScheduler" || sink.got[0].Name != "weird" {
		t.Errorf("events %v, want one InvalidScheduler for weird", sink.got)
	}
}

type recordingSink struct{ got []proxier.Problem }

func (r *recordingSink) Warn(p proxier.Problem) { r.got = append(r.got, p) }

// TestFullSyncSpreadsRealServerChecks: with CheckEvery 10 a full sync re-reads
// the real servers of about a tenth of the virtual servers, and a real server deleted by
// hand is still back within 10 full syncs.
func TestFullSyncSpreadsRealServerChecks(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 10 })
	addServices(h, 1000)
	h.mustSync(t)
	want := h.fake.Dump()
	h.fake.ResetOps()
	h.tracker.AllChanged()
	h.mustSync(t)
	if n := h.fake.Ops()["ListRealServers"]; n < 50 || n > 200 {
		t.Errorf("a full sync listed the real servers of %d of 1,000 virtual servers, want about 100", n)
	}

	if m := mutations(h.fake.Ops()); len(m) != 0 {
		t.Errorf("a full sync with nothing to repair wrote %v", m)
	}
	if n := h.fake.Ops()["ListEntries"]; n != 0 {
		t.Errorf("a full sync listed %d sets whose counts matched", n)
	}
	// A set flushed by hand is noticed by its count at the next full sync, not 10 later.
	h.fake.FlushSet("KUBE-CLUSTER-IP")
	h.tracker.AllChanged()
	h.mustSync(t)
	if got := h.fake.Dump(); got != want {
		t.Errorf("flushed set not repaired by the next full sync:\n%s", diffLines(got, want))
	}
	// A Service changed just before a full sync gets all its objects, set members too.
	h.src.SetService(svc("bench", "late", "10.99.0.1", 80, v1.ProtocolTCP))
	k, _ := h.src.SetSlice(slice("bench", "late", "late-1", 8080, v1.ProtocolTCP, "10.98.0.1"))
	h.tracker.ServiceChanged(k)
	h.tracker.AllChanged()
	h.mustSync(t)
	if d := h.fake.Dump(); !strings.Contains(d, "add KUBE-CLUSTER-IP 10.99.0.1,tcp:80") || !strings.Contains(d, "10.99.0.1:80") {
		t.Errorf("a Service changed before a full sync is not fully programmed:\n%s", d)
	}
	h.src.DeleteService(k)
	h.tracker.ServiceChanged(k)
	h.mustSync(t)
	key := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.100.0.7"), Port: 80}
	rss, _ := h.fake.ListRealServers(key)
	must(t, h.fake.DeleteRealServer(key, rss[0]))
	// Drift that keeps a set's count: found by the full listing every 10th full sync.
	must(t, h.fake.DelEntry("KUBE-CLUSTER-IP", kernel.SetEntry{IP: key.Address, Protocol: kernel.TCP, Port: 80}))
	must(t, h.fake.AddEntry("KUBE-CLUSTER-IP", kernel.SetEntry{IP: netip.MustParseAddr("10.200.0.1"), Protocol: kernel.TCP, Port: 80}))
	for range 10 {
		h.tracker.AllChanged()
		h.mustSync(t)
	}
	if got := h.fake.Dump(); got != want {
		t.Errorf("real server or set member not restored within 10 full syncs:\n%s", diffLines(got, want))
	}
}
