package reconcile

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
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
			checkRealServerCount(t, h.syncer) // failures forget virtual servers: the count follows
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
			checkRealServerCount(t, h.syncer)
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNothingBeforeInformersSync: no kernel call until the source has synced.
func TestNothingBeforeInformersSync(t *testing.T) {
	fake := kernel.NewFake()
	src := &unsyncedSource{StaticSource: source.NewStaticSource()}
	s := NewSyncer(Options{Config: proxier.Config{NodeName: testNode}}, fake.Kernel(), src, source.NewTracker(nil))
	if err := s.Sync(); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("err %v, want ErrNotSynced", err)
	}
	if ops := fake.Ops(); len(ops) != 0 {
		t.Errorf("kernel touched before sync: %v", ops)
	}
}

type unsyncedSource struct{ *source.StaticSource }

func (unsyncedSource) HasSynced() bool { return false }

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
	// Its endpoints changed just before a full sync that does not read its real servers.
	h.src.SetSlice(slice("bench", "late", "late-1", 8080, v1.ProtocolTCP, "10.98.0.2"))
	h.tracker.ServiceChanged(k)
	h.tracker.AllChanged()
	h.mustSync(t)
	if d := h.fake.Dump(); !strings.Contains(d, "10.98.0.2:8080") || strings.Contains(d, "10.98.0.1:8080") {
		t.Errorf("new endpoints before a full sync are not programmed:\n%s", d)
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

// TestFullSyncBoundsRealServerReads: past ipvs.RealServerReads × CheckEvery virtual servers, a
// full sync reads the real servers of about ipvs.RealServerReads of them, and a real server
// deleted by hand is back within the rotation's period (ipvs.RotationPeriod).
func TestFullSyncBoundsRealServerReads(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 2 })
	const n = 4000 // one virtual server each
	rounds := ipvs.RotationPeriod(2, n)
	addServices(h, n)
	h.mustSync(t)
	want := h.fake.Dump()
	key := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.100.0.7"), Port: 80}
	rss, _ := h.fake.ListRealServers(key)
	must(t, h.fake.DeleteRealServer(key, rss[0]))
	for i := range rounds {
		h.fake.ResetOps()
		h.tracker.AllChanged()
		h.mustSync(t)
		if n := h.fake.Ops()["ListRealServers"]; n < ipvs.RealServerReads/2 || n > ipvs.RealServerReads*3/2 {
			t.Errorf("full sync %d listed the real servers of %d of 4,000 virtual servers, want about %d", i, n, ipvs.RealServerReads)
		}
	}
	if got := h.fake.Dump(); got != want {
		t.Errorf("real server not restored within %d full syncs:\n%s", rounds, diffLines(got, want))
	}
}

// TestFullSyncUncountedSets: where the backend cannot count a set's members (nftables),
// up to listUncountedUpTo members every full sync lists every set, so a set flushed by
// hand is back at the next; past it a light full sync lists no set, and the flushed set
// is repaired by the heavy round, within CheckEvery full syncs.
func TestFullSyncUncountedSets(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 4 })
	h.fake.Uncounted = true
	addServices(h, 100)
	h.mustSync(t)
	want := h.fake.Dump()
	h.fake.FlushSet("KUBE-CLUSTER-IP")
	h.tracker.AllChanged()
	h.mustSync(t)
	if got := h.fake.Dump(); got != want {
		t.Errorf("with few members, a flushed set not repaired by the next full sync:\n%s", diffLines(got, want))
	}
	h.syncer.listUncountedUpTo = 10
	h.fake.FlushSet("KUBE-CLUSTER-IP")
	listed := 0
	for i := range 4 {
		h.fake.ResetOps()
		h.tracker.AllChanged()
		h.mustSync(t)
		if n := h.fake.Ops()["ListEntries"]; n != 0 {
			listed++
			if n < len(proxier.Sets(h.syncer.cfg.Families)) {
				t.Errorf("full sync %d listed %d sets: the heavy round lists every set", i, n)
			}
		}
	}
	if listed != 1 {
		t.Errorf("%d of 4 full syncs listed the sets, want one (the heavy round)", listed)
	}
	if got := h.fake.Dump(); got != want {
		t.Errorf("flushed set not repaired within 4 full syncs:\n%s", diffLines(got, want))
	}
}

// TestSetRepairSwappedMember: a member deleted by hand and a stranger added to the same
// set keep its count, so only a listing finds them; the full sync that lists the set
// deletes the stranger and adds the member back.
func TestSetRepairSwappedMember(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.CheckEvery = 1 })
	addServices(h, 10)
	h.mustSync(t)
	want := h.fake.Dump()
	entries, err := h.fake.ListEntries("KUBE-CLUSTER-IP")
	if err != nil || len(entries) == 0 {
		t.Fatalf("KUBE-CLUSTER-IP: %v %v", entries, err)
	}
	stranger := entries[0]
	stranger.Port = 9999
	must(t, h.fake.DelEntry("KUBE-CLUSTER-IP", entries[0]))
	must(t, h.fake.AddEntry("KUBE-CLUSTER-IP", stranger))
	h.tracker.AllChanged()
	h.mustSync(t)
	if got := h.fake.Dump(); got != want {
		t.Errorf("swapped member not repaired:\n%s", diffLines(got, want))
	}
}
