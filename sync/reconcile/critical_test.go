package reconcile

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// orderKernel records, in order, what the syncer writes: the virtual servers of each
// WriteVirtualServers call, the addresses of each WriteAddresses call, and where the
// rules' restores fall among them.
type orderKernel struct {
	kernel.IPVS
	kernel.Addresses
	kernel.Rules
	mu     sync.Mutex
	events []string
}

func (o *orderKernel) note(s string) { o.mu.Lock(); o.events = append(o.events, s); o.mu.Unlock() }

func (o *orderKernel) WriteVirtualServers(ops []kernel.VirtualServerOp) []error {
	var keys []string
	for _, op := range ops {
		keys = append(keys, op.VS.VSKey.String())
	}
	slices.Sort(keys)
	o.note(fmt.Sprintf("vs %v", keys))
	return o.IPVS.WriteVirtualServers(ops)
}

func (o *orderKernel) WriteAddresses(dev string, ops []kernel.AddressOp) []error {
	var as []string
	for _, op := range ops {
		as = append(as, op.Addr.String())
	}
	slices.Sort(as)
	o.note(fmt.Sprintf("addr %v", as))
	return o.Addresses.WriteAddresses(dev, ops)
}

func (o *orderKernel) Restore(f kernel.Family, rules *kernel.Ruleset) error {
	o.note("restore " + f.String())
	return o.Rules.Restore(f, rules)
}

// orderHarness is a harness on fake whose writes o records in order (k is its kernel),
// holding n ordinary Services of one endpoint each.
func orderHarness(t *testing.T, fake *kernel.Fake, n int) (h *harness, o *orderKernel, k kernel.Kernel) {
	o = &orderKernel{IPVS: fake, Addresses: fake, Rules: fake}
	k = fake.Kernel()
	k.IPVS, k.Addresses, k.Rules = o, o, o
	h = newHarness(t, k, fake)
	for i := range n {
		h.src.SetService(svc("bench", fmt.Sprintf("svc-%d", i), fmt.Sprintf("10.100.0.%d", i+1), 80, v1.ProtocolTCP))
		h.src.SetSlice(slice("bench", fmt.Sprintf("svc-%d", i), fmt.Sprintf("svc-%d-a", i), 80, v1.ProtocolTCP, "10.244.1.1"))
	}
	return h, o, k
}

// TestCriticalServicesFirst: on a new node the first sync writes the apiserver's Service
// and the cluster DNS Service (virtual servers, addresses, then the rules) before any
// other Service; everything is programmed by the end of that sync; a restart on the
// programmed node adopts them without an error.
func TestCriticalServicesFirst(t *testing.T) {
	fake := kernel.NewFake()
	h, o, k := orderHarness(t, fake, 50)
	api := svc("default", "kubernetes", "10.96.0.1", 443, v1.ProtocolTCP)
	dns := svc("kube-system", "kube-dns", "10.96.0.10", 53, v1.ProtocolUDP)
	dns.Labels = map[string]string{"k8s-app": "kube-dns"}
	h.src.SetService(api)
	h.src.SetService(dns)
	h.src.SetSlice(slice("default", "kubernetes", "kubernetes", 443, v1.ProtocolTCP, "192.168.0.10"))
	h.src.SetSlice(slice("kube-system", "kube-dns", "kube-dns-a", 53, v1.ProtocolUDP, "10.244.2.2"))
	if err := h.syncer.Sync(); err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	events := slices.Clone(o.events)
	o.mu.Unlock()
	want := []string{"vs [TCP 10.96.0.1:443 UDP 10.96.0.10:53]", "addr [10.96.0.1 10.96.0.10]", "restore IPv4", "restore IPv6"}
	if len(events) < len(want) || !slices.Equal(events[:len(want)], want) {
		t.Fatalf("first writes %q, want %q", events, want)
	}
	vss, _ := fake.ListVirtualServers()
	if len(vss) != 52 {
		t.Errorf("%d virtual servers after the first sync, want 52", len(vss))
	}
	for _, a := range []string{"10.96.0.1", "10.100.0.50"} {
		if addrs, _ := fake.ListAddresses("kube-ipvs0"); !slices.Contains(addrs, netip.MustParseAddr(a)) {
			t.Errorf("%s not bound", a)
		}
	}
	// A restart on the programmed node: the critical pass meets what is there.
	before := fake.Dump()
	h2 := newHarness(t, k, fake)
	h2.src = h.src
	h2.syncer = NewSyncer(h2.syncer.opts, k, h.src, h2.tracker)
	if err := h2.syncer.Sync(); err != nil {
		t.Fatal(err)
	}
	if after := fake.Dump(); after != before {
		t.Errorf("a restart changed the kernel:\n%s\n---\n%s", before, after)
	}
}

// TestCriticalServicesKeepOthersRules: where the node already holds rules of our chain
// names (kube-proxy's iptables mode, which shares KUBE-SERVICES with us, before a
// migration), the critical Services go first but the rules are restored only at the end
// of the sync, after every Service is written: restoring them early replaced kube-proxy's
// DNAT rules while the other Services were not yet in IPVS.
func TestCriticalServicesKeepOthersRules(t *testing.T) {
	fake := kernel.NewFake()
	theirs := "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -d 10.100.0.1/32 -p tcp --dport 80 -j KUBE-SVC-X\nCOMMIT\n"
	fake.RestoreText(kernel.IPv4, theirs)
	h, o, _ := orderHarness(t, fake, 20)
	h.src.SetService(svc("default", "kubernetes", "10.96.0.1", 443, v1.ProtocolTCP))
	h.src.SetSlice(slice("default", "kubernetes", "kubernetes", 443, v1.ProtocolTCP, "192.168.0.10"))
	h.mustSync(t)
	o.mu.Lock()
	events := slices.Clone(o.events)
	o.mu.Unlock()
	if len(events) == 0 || events[0] != "vs [TCP 10.96.0.1:443]" {
		t.Fatalf("first writes %q, want the apiserver's virtual server first", events)
	}
	restore, others := slices.Index(events, "restore IPv4"), -1
	for i, e := range events {
		if strings.HasPrefix(e, "vs [") && strings.Contains(e, "10.100.0.") {
			others = i
		}
	}
	if restore < 0 || others < 0 || restore < others {
		t.Errorf("the rules were restored before the other Services were written: %q", events)
	}
	if r, _ := fake.Save(kernel.IPv4); r == theirs {
		t.Error("the rules were not restored at the end of the sync")
	}
}

// TestCriticalServicesEarly: before the first full sync, a source of the critical
// Services alone (what the daemon reads while the informers list the cluster) programs
// them and their rules and nothing else; the first full sync then writes the rest and
// does not write them first again; once it has begun, an early pass does nothing.
func TestCriticalServicesEarly(t *testing.T) {
	fake := kernel.NewFake()
	h, o, _ := orderHarness(t, fake, 30)
	api := svc("default", "kubernetes", "10.96.0.1", 443, v1.ProtocolTCP)
	apiSlice := slice("default", "kubernetes", "kubernetes", 443, v1.ProtocolTCP, "192.168.0.10")
	h.src.SetService(api)
	h.src.SetSlice(apiSlice)
	early := source.NewStaticSource()
	early.SetService(api)
	early.SetSlice(apiSlice)
	if !h.syncer.ProgramCriticalEarly(early) {
		t.Fatal("the early pass programmed nothing")
	}
	vss, _ := fake.ListVirtualServers()
	if len(vss) != 1 || vss[0].Address != netip.MustParseAddr("10.96.0.1") {
		t.Fatalf("after the early pass: %v, want the apiserver's virtual server alone", vss)
	}
	if rss, _ := fake.ListRealServers(vss[0].VSKey); len(rss) != 1 {
		t.Errorf("the apiserver's real servers: %v", rss)
	}
	o.mu.Lock()
	if want := []string{"vs [TCP 10.96.0.1:443]", "addr [10.96.0.1]", "restore IPv4", "restore IPv6"}; !slices.Equal(o.events, want) {
		t.Errorf("the early pass wrote %q, want %q", o.events, want)
	}
	o.events = nil
	o.mu.Unlock()
	h.mustSync(t)
	if vss, _ := fake.ListVirtualServers(); len(vss) != 31 {
		t.Errorf("%d virtual servers after the first full sync, want 31", len(vss))
	}
	o.mu.Lock()
	events := slices.Clone(o.events)
	o.mu.Unlock()
	if len(events) > 0 && events[0] == "vs [TCP 10.96.0.1:443]" {
		t.Errorf("the first full sync wrote the critical Services first again: %q", events)
	}
	if h.syncer.ProgramCriticalEarly(early) {
		t.Error("an early pass after the first full sync programmed again")
	}
}
