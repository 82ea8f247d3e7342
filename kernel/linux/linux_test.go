package linux

import (
	"errors"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	ct "github.com/ti-mo/conntrack"
	"github.com/ti-mo/netfilter"
	"github.com/vishvananda/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

var ap = netip.MustParseAddrPort

// TestIPSetsReal: every set type kube-proxy uses is created with our revision, and
// members are added, listed, deleted, with the kernel's errors mapped to the seam's.
func TestIPSetsReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	s := &IPSets{}
	for _, set := range proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}) {
		if err := s.EnsureSet(set); err != nil {
			t.Fatalf("create %s: %v", set.Name, err)
		}
		if err := s.EnsureSet(set); err != nil {
			t.Fatalf("re-create %s: %v", set.Name, err)
		}
	}
	// A set of ours with another type (kubernetes#77265) is reported, not used.
	wrongType := kernel.Set{Name: "KUBE-TEST-TYPE", Type: kernel.HashIP, Family: kernel.IPv4, MaxElem: 1024}
	if err := s.EnsureSet(wrongType); err != nil {
		t.Fatal(err)
	}
	wrongType.Type = kernel.HashIPPort
	if err := s.EnsureSet(wrongType); !errors.Is(err, kernel.ErrExist) || !strings.Contains(err.Error(), "hash:ip,") {
		t.Errorf("type changed: %v, want ErrExist naming hash:ip", err)
	}
	a := netip.MustParseAddr
	cases := []struct {
		set string
		e   kernel.SetEntry
	}{
		{"KUBE-CLUSTER-IP", kernel.SetEntry{IP: a("10.96.0.1"), Protocol: kernel.TCP, Port: 443}},
		{"KUBE-CLUSTER-IP", kernel.SetEntry{IP: a("10.96.0.10"), Protocol: kernel.UDP, Port: 53}},
		{"KUBE-NODE-PORT-SCTP-HASH", kernel.SetEntry{IP: a("192.168.1.1"), Protocol: kernel.SCTP, Port: 30001}},
		{"KUBE-LOOP-BACK", kernel.SetEntry{IP: a("10.244.0.5"), Protocol: kernel.TCP, Port: 8080, IP2: a("10.244.0.5")}},
		{"KUBE-LOAD-BALANCER-SOURCE-CIDR", kernel.SetEntry{IP: a("1.2.3.4"), Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("10.0.0.0/8")}},
		{"KUBE-NODE-PORT-TCP", kernel.SetEntry{Port: 30080}},
		{"KUBE-HEALTH-CHECK-NODE-PORT", kernel.SetEntry{Port: 32000}},
		{"KUBE-IPVS-IPS", kernel.SetEntry{IP: a("10.96.0.1")}},
		{"KUBE-6-CLUSTER-IP", kernel.SetEntry{IP: a("fd00::1"), Protocol: kernel.TCP, Port: 80}},
		{"KUBE-6-LOOP-BACK", kernel.SetEntry{IP: a("fd00::5"), Protocol: kernel.TCP, Port: 80, IP2: a("fd00::5")}},
	}
	for _, c := range cases {
		if err := addEntry(c.set, c.e); err != nil {
			t.Fatalf("add %s %s: %v", c.set, c.e, err)
		}
		if err := addEntry(c.set, c.e); err != nil { // the batch contract: a present member is kept
			t.Errorf("second add %s %s: %v, want nil", c.set, c.e, err)
		}
	}
	for _, c := range cases {
		got, err := s.ListEntries(c.set)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got, c.e) {
			t.Errorf("list %s = %v, lacks %s", c.set, got, c.e)
		}
	}
	// The kernel's own tool reads what we wrote (in the VM; the host has no ipset binary).
	if _, err := exec.LookPath("ipset"); err == nil {
		for set, want := range map[string]string{"KUBE-NODE-PORT-TCP": "30080", "KUBE-LOAD-BALANCER-SOURCE-CIDR": "1.2.3.4,tcp:80,10.0.0.0/8",
			"KUBE-LOOP-BACK": "10.244.0.5,tcp:8080,10.244.0.5", "KUBE-NODE-PORT-SCTP-HASH": "192.168.1.1,sctp:30001"} {
			if out, err := execOut("ipset", "list", set); err != nil || !strings.Contains(out, "\n"+want+"\n") {
				t.Errorf("ipset list %s lacks %s: %v\n%s", set, want, err, out)
			}
		}
	}
	for _, c := range cases {
		if err := delEntry(c.set, c.e); err != nil {
			t.Errorf("del %s %s: %v", c.set, c.e, err)
		}
		if err := delEntry(c.set, c.e); err != nil { // ... and deleting an absent one succeeds
			t.Errorf("second del %s %s: %v, want nil", c.set, c.e, err)
		}
		if got, _ := s.ListEntries(c.set); slices.Contains(got, c.e) {
			t.Errorf("%s still holds %s after the delete", c.set, c.e)
		}
	}
	if err := addEntry("KUBE-NO-SUCH-SET", cases[0].e); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("add to missing set: %v, want ErrNotFound", err)
	}
	if err := s.EnsureSet(kernel.Set{Name: "KUBE-CLUSTER-IP", Type: kernel.HashIP, Family: kernel.IPv4}); err == nil {
		t.Error("re-creating a set with another type succeeded")
	}
	// Capacity: more than kube-proxy's 65,536, once the set is grown to hold them (made
	// with kube-proxy's, the 65,537th add fails: IPSET_ERR_HASH_FULL).
	grown := kernel.Set{Name: "KUBE-CLUSTER-IP", Type: kernel.HashIPPort, Family: kernel.IPv4, MaxElem: proxier.SetCapacity(70000)}
	if err := s.EnsureSet(grown); err != nil {
		t.Fatal(err)
	}
	ops := make([]kernel.SetOp, 70000)
	for i := range ops {
		ops[i] = kernel.SetOp{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: netip.AddrFrom4([4]byte{10, byte(100 + i>>16), byte(i >> 8), byte(i)}), Protocol: kernel.TCP, Port: 80}}
	}
	for i, err := range s.WriteEntries(ops) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if got, err := s.ListEntries("KUBE-CLUSTER-IP"); err != nil || len(got) != 70000 {
		t.Errorf("listed %d entries (%v), want 70000", len(got), err)
	}
}

// TestAddressesReal binds and unbinds /32 and /128 addresses (on a veth: the host kernel
// has no dummy driver; the VM tests use kube-ipvs0 itself).
// TestLocalAddressesReal: every interface's addresses but the skipped one's, without
// loopback and link-local ones.
func TestLocalAddressesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "node0"}, PeerName: "skip0"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	for dev, addrs := range map[string][]string{"node0": {"192.168.7.1", "fd00:7::1", "fe80::7"}, "skip0": {"10.96.7.1", "10.96.7.2"}} {
		for _, a := range addrs {
			if err := bind(dev, netip.MustParseAddr(a)); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := LocalAddresses("skip0")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, netip.Addr.Compare)
	if want := []netip.Addr{netip.MustParseAddr("192.168.7.1"), netip.MustParseAddr("fd00:7::1")}; !slices.Equal(got, want) {
		t.Errorf("LocalAddresses = %v, want %v", got, want)
	}
}

func TestAddressesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vip0"}, PeerName: "vip1"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	x := &Addresses{}
	for _, s := range []string{"10.96.0.1", "fd00::96:1"} {
		a := netip.MustParseAddr(s)
		if err := bind("vip0", a); err != nil {
			t.Fatal(err)
		}
		if err := bind("vip0", a); err != nil { // the batch contract: a bound address is kept
			t.Errorf("second bind %s: %v, want nil", a, err)
		}
		got, err := x.ListAddresses("vip0")
		if err != nil || !slices.Contains(got, a) {
			t.Errorf("list %v %v lacks %s", got, err, a)
		}
		if err := unbind("vip0", a); err != nil {
			t.Fatal(err)
		}
		if err := unbind("vip0", a); err != nil { // ... and unbinding an absent one succeeds
			t.Errorf("second unbind %s: %v, want nil", a, err)
		}
		if got, _ := x.ListAddresses("vip0"); slices.Contains(got, a) {
			t.Errorf("%s still bound after the unbind", a)
		}
	}
	if err := bind("nosuchdev", netip.MustParseAddr("10.0.0.1")); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("bind on missing device: %v", err)
	}
}

// TestConntrackReal: stats come from one query; ClearUDP deletes only the flows of the
// given frontend (and endpoint).
func TestConntrackReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	var c Conntrack
	if _, err := c.Stats(); err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mk := func(src, vip, ep netip.AddrPort) {
		f := ct.NewFlow(17, 0, src.Addr(), vip.Addr(), src.Port(), vip.Port(), 120, 0)
		f.TupleReply.IP.SourceAddress, f.TupleReply.Proto.SourcePort = ep.Addr(), ep.Port()
		f.TupleReply.IP.DestinationAddress, f.TupleReply.Proto.DestinationPort = src.Addr(), src.Port()
		if err := conn.Create(f); err != nil {
			t.Fatalf("create flow: %v", err)
		}
	}
	mk(ap("10.0.0.1:1000"), ap("10.96.0.10:53"), ap("10.244.0.5:53"))
	mk(ap("10.0.0.1:1001"), ap("10.96.0.10:53"), ap("10.244.0.6:53"))
	mk(ap("10.0.0.1:1002"), ap("10.96.0.11:53"), ap("10.244.0.5:53"))
	if st, _ := c.Stats(); st.Entries < 3 {
		t.Errorf("stats entries %d, want >= 3", st.Entries)
	}
	if err := c.ClearUDP(ap("10.96.0.10:53"), ap("10.244.0.5:53")); err != nil {
		t.Fatal(err)
	}
	flows := func() []string {
		fs, err := conn.DumpFilter(ct.NewFilter().Family(netfilter.ProtoIPv4), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fs {
			out = append(out, netip.AddrPortFrom(f.TupleOrig.IP.DestinationAddress, f.TupleOrig.Proto.DestinationPort).String()+">"+
				netip.AddrPortFrom(f.TupleReply.IP.SourceAddress, f.TupleReply.Proto.SourcePort).String())
		}
		slices.Sort(out)
		return out
	}
	if got := flows(); !slices.Equal(got, []string{"10.96.0.10:53>10.244.0.6:53", "10.96.0.11:53>10.244.0.5:53"}) {
		t.Errorf("after endpoint clear: %v", got)
	}
	if err := c.ClearUDP(ap("10.96.0.10:53"), netip.AddrPort{}); err != nil {
		t.Fatal(err)
	}
	if got := flows(); !slices.Equal(got, []string{"10.96.0.11:53>10.244.0.5:53"}) {
		t.Errorf("after frontend clear: %v", got)
	}
	if _, err := exec.LookPath("conntrack"); err == nil {
		if out, _ := execOut("conntrack", "-L", "-p", "udp"); strings.Contains(out, "dst=10.96.0.10") || !strings.Contains(out, "dst=10.96.0.11") {
			t.Errorf("conntrack -L:\n%s", out)
		}
	}
	// The kernel filters: with 500 unrelated flows, only the 2 matching ones reach us.
	for i := range 500 {
		mk(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 2000), ap("10.96.0.99:53"), ap("10.244.0.9:53"))
	}
	mk(ap("10.0.0.2:1000"), ap("10.96.0.10:53"), ap("10.244.0.5:53"))
	mk(ap("10.0.0.3:1000"), ap("10.96.0.10:53"), ap("10.244.0.5:53"))
	received, deleted, err := clearUDPFiltered(ap("10.96.0.10:53"), ap("10.244.0.5:53"))
	if err != nil || received != 2 || deleted != 2 {
		t.Errorf("filtered clear: received %d deleted %d (%v), want 2 and 2", received, deleted, err)
	}
}

// TestIptablesReal: our rules restore, jumps are not duplicated, other chains survive,
// and Save reads back a stable text.
func TestIptablesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	var chains []string
	for _, cs := range proxier.RuleChains {
		chains = append(chains, cs...)
	}
	ipt := NewIptables(chains)
	cfg := proxier.Config{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}.WithDefaults()
	// The host kernel lacks xt_ipvs: the KUBE-IPVS-OUT-FILTER rule is checked in the VM.
	var outFilters []proxier.OutFilter
	inVM := kerneltest.InVM()
	if inVM {
		outFilters = []proxier.OutFilter{{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("1.2.3.4"), Port: 80}}}
	}
	rules := proxier.Rules(&cfg, kernel.IPv4, outFilters).String()
	// The sets must exist for iptables to accept -m set rules.
	for _, s := range proxier.Sets([]kernel.Family{kernel.IPv4}) {
		if err := (&IPSets{}).EnsureSet(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := ipt.restoreText(kernel.IPv4, rules); err != nil {
		t.Fatal(err)
	}
	first, err := ipt.Save(kernel.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	// Every jump we render reads back verbatim: Restore finds them in one save, with no
	// `iptables -C` per jump.
	tables, err := ipt.saveAll(kernel.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	table := ""
	for _, line := range strings.Split(rules, "\n") {
		if strings.HasPrefix(line, "*") {
			table = line[1:]
		}
		if chain, _, ok := strings.Cut(strings.TrimPrefix(line, "-A "), " "); ok && strings.HasPrefix(line, "-A ") && !ipt.chains[chain] &&
			!slices.Contains(tables[table], line) {
			t.Errorf("jump %q is not in iptables-save's form; saved %s:\n%s", line, table, strings.Join(tables[table], "\n"))
		}
	}
	if err := ipt.restoreText(kernel.IPv4, rules); err != nil {
		t.Fatal(err)
	}
	second, _ := ipt.Save(kernel.IPv4)
	if first != second {
		t.Errorf("restore is not idempotent:\n%s\n---\n%s", first, second)
	}
	for _, want := range []string{"-A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER",
		"--match-set KUBE-NO-ENDPOINTS dst,dst -j REJECT"} {
		if !strings.Contains(first, want) {
			t.Errorf("saved rules lack %q:\n%s", want, first)
		}
	}
	if inVM && !strings.Contains(first, "-A KUBE-IPVS-OUT-FILTER -s 1.2.3.4/32 -m ipvs --vproto 6 --vaddr 1.2.3.4 --vport 80 -j DROP") {
		t.Errorf("saved rules lack the out-filter:\n%s", first)
	}
	if strings.Count(first, "-j KUBE-SERVICES") != 2 {
		t.Errorf("jumps to KUBE-SERVICES: %d, want 2", strings.Count(first, "-j KUBE-SERVICES"))
	}
	// Another program's chain is left alone.
	if out, err := execOut("iptables-"+ipt.Mode(), "-w", "-N", "OTHER"); err != nil {
		t.Fatal(out, err)
	}
	if err := ipt.restoreText(kernel.IPv4, strings.Replace(rules, "10.244.0.0/16", "10.245.0.0/16", -1)); err != nil {
		t.Fatal(err)
	}
	if out, err := execOut("iptables-"+ipt.Mode(), "-w", "-L", "OTHER"); err != nil {
		t.Errorf("our restore removed another chain: %s %v", out, err)
	}
}

// TestIptablesLegacyReal: a node whose kubelet uses iptables-legacy gets our rules there too.
func TestIptablesLegacyReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	// kubelet marks the flavour it uses with this chain (our earlier tests left more
	// rules in nft, so only the hint can pick legacy here).
	if out, err := execOut("iptables-legacy", "-w", "-t", "mangle", "-N", "KUBE-IPTABLES-HINT"); err != nil {
		t.Skipf("no iptables-legacy here: %v %s", err, out)
	}
	t.Cleanup(func() { // leave the machine to nft, which later tests use
		for _, table := range []string{"filter", "nat", "mangle"} {
			_, _ = execOut("iptables-legacy", "-w", "-t", table, "-F")
			_, _ = execOut("iptables-legacy", "-w", "-t", table, "-X")
		}
	})
	var chains []string
	for _, cs := range proxier.RuleChains {
		chains = append(chains, cs...)
	}
	for _, set := range proxier.Sets([]kernel.Family{kernel.IPv4}) {
		if err := (&IPSets{}).EnsureSet(set); err != nil {
			t.Fatal(err)
		}
	}
	ipt := NewIptables(chains)
	if ipt.Mode() != "legacy" {
		t.Fatalf("mode %s with rules only in legacy", ipt.Mode())
	}
	cfg := proxier.Config{}.WithDefaults()
	if err := ipt.restoreText(kernel.IPv4, proxier.Rules(&cfg, kernel.IPv4, nil).String()); err != nil {
		t.Fatal(err)
	}
	if out, err := execOut("iptables-legacy-save", "-t", "nat"); err != nil || !strings.Contains(out, "-A KUBE-MARK-MASQ -j MARK") {
		t.Errorf("legacy tables lack our rules: %v\n%s", err, out[:min(len(out), 3000)])
	}
}
