package linux

import (
	"errors"
	"maps"
	"net/netip"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// nftConfig is a config whose rules use every match and target of our nftables table.
func nftConfig(mode proxier.LocalMode) proxier.Config {
	bit := 14
	return proxier.Config{RulesBackend: proxier.RulesNftables, MasqueradeBit: &bit, LocalMode: mode,
		ClusterCIDRs:    []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")},
		ServiceCIDRs:    []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00:10:96::/112")},
		BridgeInterface: "cni0", InterfaceNamePrefix: "veth"}
}

// TestNftablesSetsReal: every set the proxier makes exists in our table with its
// nftables key; members of every type are added, listed back equal, deleted; a delete
// of an absent member succeeds inside a batch without undoing the rest; transactions
// stay within MaxBatch members.
func TestNftablesSetsReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	x := NewNftables(proxier.NftTable)
	x.MaxBatch = 3
	defer x.Close()
	defer func() { _, _ = x.DeleteTables() }()
	for _, set := range proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}) {
		for range 2 {
			if err := x.EnsureSet(set); err != nil {
				t.Fatalf("ensure %s: %v", set.Name, err)
			}
		}
	}
	wrong := kernel.Set{Name: "KUBE-CLUSTER-IP", Type: kernel.HashIP, Family: kernel.IPv4}
	if err := x.EnsureSet(wrong); !errors.Is(err, kernel.ErrExist) {
		t.Errorf("type changed: %v, want ErrExist", err)
	}
	a, p := netip.MustParseAddr, netip.MustParsePrefix
	cases := []kernel.Member{
		{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("10.96.0.1"), Protocol: kernel.TCP, Port: 443}},
		{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("10.96.0.10"), Protocol: kernel.UDP, Port: 53}},
		{Set: "KUBE-NODE-PORT-SCTP-HASH", Entry: kernel.SetEntry{IP: a("192.168.1.1"), Protocol: kernel.SCTP, Port: 30001}},
		{Set: "KUBE-LOOP-BACK", Entry: kernel.SetEntry{IP: a("10.244.0.5"), Protocol: kernel.TCP, Port: 8080, IP2: a("10.244.0.5")}},
		{Set: "KUBE-LOAD-BALANCER-SOURCE-CIDR", Entry: kernel.SetEntry{IP: a("1.2.3.4"), Protocol: kernel.TCP, Port: 80, Net: p("10.0.0.0/8")}},
		{Set: "KUBE-LOAD-BALANCER-SOURCE-CIDR", Entry: kernel.SetEntry{IP: a("1.2.3.4"), Protocol: kernel.TCP, Port: 80, Net: p("192.168.7.7/32")}},
		{Set: "KUBE-NODE-PORT-TCP", Entry: kernel.SetEntry{Port: 30080}},
		{Set: "KUBE-HEALTH-CHECK-NODE-PORT", Entry: kernel.SetEntry{Port: 32000}},
		{Set: "KUBE-IPVS-IPS", Entry: kernel.SetEntry{IP: a("10.96.0.1")}},
		{Set: "KUBE-6-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("fd00::1"), Protocol: kernel.TCP, Port: 80}},
		{Set: "KUBE-6-LOOP-BACK", Entry: kernel.SetEntry{IP: a("fd00::5"), Protocol: kernel.TCP, Port: 80, IP2: a("fd00::5")}},
		{Set: "KUBE-6-LOAD-BALANCER-SOURCE-CID", Entry: kernel.SetEntry{IP: a("fd00::9"), Protocol: kernel.UDP, Port: 53, Net: p("fd00:1::/64")}},
	}
	var ops []kernel.SetOp
	for _, m := range cases {
		ops = append(ops, kernel.SetOp{Set: m.Set, Entry: m.Entry})
	}
	// A delete of a member that is not there, amid adds.
	ops = slices.Insert(ops, 4, kernel.SetOp{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("10.96.9.9"), Protocol: kernel.TCP, Port: 1}, Delete: true})
	for i, err := range x.WriteEntries(ops) {
		if err != nil {
			t.Errorf("op %d (%v): %v", i, ops[i].Entry, err)
		}
	}
	if s := x.Stats(); s.LargestMembers > 3 || s.Transactions < len(ops)/3 || s.Redone != 1 {
		t.Errorf("stats %+v: want transactions of at most 3 members, one (the absent delete's) redone", s)
	}
	for _, m := range cases {
		got, err := x.ListEntries(m.Set)
		if err != nil {
			t.Fatalf("list %s: %v", m.Set, err)
		}
		if !slices.Contains(got, m.Entry) {
			t.Errorf("%s: %v missing from %v", m.Set, m.Entry, got)
		}
	}
	// nft itself reads each member back as the plan prints it (kernel.FormatNftSets).
	members := map[string][]kernel.SetEntry{}
	for _, m := range cases {
		members[m.Set] = append(members[m.Set], m.Entry)
	}
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		sets := proxier.Sets([]kernel.Family{f})
		fam := map[kernel.Family]string{kernel.IPv4: "ip", kernel.IPv6: "ip6"}[f]
		out, err := exec.Command("nft", "list", "table", fam, proxier.NftTable).CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		if got, want := nftSetBlocks(string(out)), nftSetBlocks(kernel.FormatNftSets(sets, members)); !maps.Equal(got, want) {
			t.Errorf("%s sets: nft lists\n%v\nplan prints\n%v", f, got, want)
		}
	}
	// An address of the other family is refused for that op only.
	errs := x.WriteEntries([]kernel.SetOp{{Set: "KUBE-IPVS-IPS", Entry: kernel.SetEntry{IP: a("fd00::1")}}, {Set: "KUBE-IPVS-IPS", Entry: kernel.SetEntry{IP: a("10.96.0.2")}}})
	if errs[0] == nil || errs[1] != nil {
		t.Errorf("family mismatch: %v", errs)
	}
	var dels []kernel.SetOp
	for _, m := range cases {
		dels = append(dels, kernel.SetOp{Set: m.Set, Entry: m.Entry, Delete: true})
	}
	for i, err := range x.WriteEntries(dels) {
		if err != nil {
			t.Errorf("delete %d: %v", i, err)
		}
	}
	if got, _ := x.ListEntries("KUBE-CLUSTER-IP"); len(got) != 0 {
		t.Errorf("after deletes: %v", got)
	}
}

// TestNftablesRulesReal: the encoded ruleset loads in one transaction, and nft itself
// lists it back as the ruleset's nft text (so the expressions mean what the text says);
// Save sees a rule added behind our back; a restore of other text replaces the chains;
// DeleteTables removes everything.
func TestNftablesRulesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	if kerneltest.InVM() {
		// As the daemon does at start: the VM's kernel cannot load a module on demand.
		Preflight{Rules: NftablesModules}.Check(nil)
	}
	x := NewNftables(proxier.NftTable)
	defer x.Close()
	defer func() { _, _ = x.DeleteTables() }()
	fams := []kernel.Family{kernel.IPv4, kernel.IPv6}
	for _, set := range proxier.Sets(fams) {
		if err := x.EnsureSet(set); err != nil {
			t.Fatal(err)
		}
	}
	outFilters := []proxier.OutFilter{{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("5.6.7.8"), Port: 80}},
		{VSKey: kernel.VSKey{Protocol: kernel.UDP, Address: netip.MustParseAddr("fd00::8"), Port: 53}}}
	for _, mode := range []proxier.LocalMode{proxier.LocalModeClusterCIDR, proxier.LocalModeBridgeInterface, proxier.LocalModeInterfaceNamePrefix} {
		cfg := nftConfig(mode)
		for _, f := range fams {
			rs := proxier.Rules(&cfg, f, outFilters)
			text := rs.Nft()
			if err := x.Restore(f, rs); err != nil {
				t.Fatalf("%s %s: %v", mode, f, err)
			}
			listed := nftList(t, f)
			if want := normalizeNft(text); listed != want {
				t.Errorf("%s %s: nft lists\n%s\nwant\n%s", mode, f, listed, want)
			}
		}
	}
	saved, err := x.Save(kernel.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := x.Save(kernel.IPv4); again != saved {
		t.Fatal("two saves differ")
	}
	// Drift: a rule added by someone else.
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tbl := &nftables.Table{Name: proxier.NftTable, Family: nftables.TableFamilyIPv4}
	c.AddRule(&nftables.Rule{Table: tbl, Chain: &nftables.Chain{Name: "KUBE-SERVICES", Table: tbl}, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if drifted, _ := x.Save(kernel.IPv4); drifted == saved {
		t.Error("Save did not change after a rule was added")
	}
	// Other text: a chain no longer rendered is deleted, the rest rewritten.
	short := &kernel.Ruleset{Family: kernel.IPv4, Table: proxier.NftTable, Chains: []kernel.Chain{{Name: "KUBE-MARK-MASQ", Table: "nat"}},
		Rules: []kernel.Rule{{Table: "nat", Chain: "KUBE-MARK-MASQ", Target: kernel.Target{Kind: kernel.MarkOr, Mark: 0x4000}}}}
	if err := x.Restore(kernel.IPv4, short); err != nil {
		t.Fatal(err)
	}
	if got := nftList(t, kernel.IPv4); got != normalizeNft(short.Nft()) {
		t.Errorf("after a short restore: %s", got)
	}
	physdev := &kernel.Ruleset{Family: kernel.IPv4, Table: proxier.NftTable, Chains: []kernel.Chain{{Name: "X", Table: "nat"}},
		Rules: []kernel.Rule{{Table: "nat", Chain: "X", Matches: []kernel.Match{kernel.PhysdevIsIn{}}, Target: kernel.Target{Kind: kernel.Accept}}}}
	if err := x.Restore(kernel.IPv4, physdev); err == nil {
		t.Error("a match nftables has no expression for was accepted")
	}
	if n, err := x.DeleteTables(); err != nil || n != 2 {
		t.Fatalf("DeleteTables: %d %v, want both families'", n, err)
	}
	if out, err := exec.Command("nft", "list", "tables").CombinedOutput(); err != nil || strings.Contains(string(out), proxier.NftTable) {
		t.Errorf("after DeleteTables: %s %v", out, err)
	}
}

// nftList is `nft list table` of our table in f, without the sets, normalized.
func nftList(t *testing.T, f kernel.Family) string {
	t.Helper()
	fam := "ip"
	if f == kernel.IPv6 {
		fam = "ip6"
	}
	out, err := exec.Command("nft", "list", "table", fam, proxier.NftTable).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list table: %v: %s", err, out)
	}
	return normalizeNft(regexp.MustCompile(`(?s)\tset [^\n]* \{.*?\n\t\}\n`).ReplaceAllString(string(out), ""))
}

// nftSetBlocks maps each set block of an nft listing to its lines, the members sorted:
// nft prints them in the set's own order.
func nftSetBlocks(s string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)\tset (\S+) \{\n(.*?)\n\t\}\n`).FindAllStringSubmatch(s, -1) {
		var lines, els []string
		for _, l := range strings.Split(m[2], "\n") {
			l = strings.TrimSpace(l)
			if rest, ok := strings.CutPrefix(l, "elements = { "); ok {
				l = rest
			}
			if strings.HasPrefix(l, "type ") || strings.HasPrefix(l, "flags ") || strings.HasPrefix(l, "comment ") {
				lines = append(lines, l)
				continue
			}
			for _, e := range strings.Split(strings.TrimSuffix(l, " }"), ",") {
				if e = strings.TrimSpace(e); e != "" {
					els = append(els, e)
				}
			}
		}
		slices.Sort(els)
		out[m[1]] = strings.Join(append(lines, els...), "\n")
	}
	return out
}

// normalizeNft drops blank lines and indentation.
func normalizeNft(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestNftablesAdoptReal: a fresh Nftables reads none of our table's sets until Adopt
// finds them; Adopt makes nothing where nothing is (cleanup reads the ownership sets of
// a node that ran the nftables backend through it).
func TestNftablesAdoptReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	sets := proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6})
	x := NewNftables(proxier.NftTable)
	defer x.Close()
	defer func() { _, _ = x.DeleteTables() }()
	for _, set := range sets {
		if err := x.EnsureSet(set); err != nil {
			t.Fatalf("ensure %s: %v", set.Name, err)
		}
	}
	for i, err := range x.WriteEntries([]kernel.SetOp{{Set: "KUBE-NODE-PORT-TCP", Entry: kernel.SetEntry{Port: 8080}}}) {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	fresh := NewNftables(proxier.NftTable)
	defer fresh.Close()
	if _, err := fresh.ListEntries("KUBE-NODE-PORT-TCP"); !errors.Is(err, kernel.ErrNotFound) {
		t.Fatalf("read before Adopt: %v, want ErrNotFound", err)
	}
	if n := fresh.Adopt(sets); n != len(sets) {
		t.Errorf("adopted %d of %d sets", n, len(sets))
	}
	got, err := fresh.ListEntries("KUBE-NODE-PORT-TCP")
	if err != nil || len(got) != 1 || got[0].Port != 8080 {
		t.Errorf("after Adopt: %v %v, want port 8080", got, err)
	}
	absent := NewNftables("ipvs-proxier-absent")
	defer absent.Close()
	if n := absent.Adopt(sets); n != 0 {
		t.Errorf("adopted %d sets of a table that is not there", n)
	}
	if out, err := exec.Command("nft", "list", "tables").CombinedOutput(); err != nil || strings.Contains(string(out), "ipvs-proxier-absent") {
		t.Errorf("Adopt made a table: %s %v", out, err)
	}
}
