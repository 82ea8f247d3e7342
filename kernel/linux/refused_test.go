package linux

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestRefusedMembersReal: a member the kernel refuses for what it carries fails alone,
// marked kernel.ErrRefused, and the writes beside it land, with both set backends: an
// nftables interval element inside another (a recent kernel's concatenated set answers
// EEXIST; Debian 12's 6.1 takes it), an address of the other family, and a missing set,
// which is the node's failure and not marked.
func TestRefusedMembersReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	a, p := netip.MustParseAddr, netip.MustParsePrefix
	cidr := func(ip, net string) kernel.SetEntry {
		return kernel.SetEntry{IP: a(ip), Protocol: kernel.TCP, Port: 80, Net: p(net)}
	}
	const ranges = "KUBE-LOAD-BALANCER-SOURCE-CIDR"
	type want int
	const (
		lands want = iota
		refused
		fails          // not refused: the node's failure
		refusedIfFails // the kernel's version decides; a refusal is marked
	)
	cases := []struct {
		op   kernel.SetOp
		want want
		// nftOnly: ipset's hash:ip,port,net holds nested nets; only the interval set refuses.
		nftOnly bool
	}{
		{op: kernel.SetOp{Set: ranges, Entry: cidr("1.2.3.4", "10.0.0.0/8")}},
		{op: kernel.SetOp{Set: ranges, Entry: cidr("1.2.3.4", "10.1.0.0/16")}, want: refusedIfFails, nftOnly: true},
		{op: kernel.SetOp{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("fd00::1"), Protocol: kernel.TCP, Port: 80}}, want: refused},
		{op: kernel.SetOp{Set: "KUBE-NO-SUCH-SET", Entry: kernel.SetEntry{IP: a("10.0.0.1")}}, want: fails},
		{op: kernel.SetOp{Set: ranges, Entry: cidr("1.2.3.5", "10.1.0.0/16")}},
		{op: kernel.SetOp{Set: "KUBE-IPVS-IPS", Entry: kernel.SetEntry{IP: a("10.96.0.1")}}},
	}
	sets := proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6})
	nft := NewNftables(proxier.NftTable)
	t.Cleanup(func() { _, _ = nft.DeleteTables(); nft.Close() })
	var names []string
	for _, set := range sets {
		names = append(names, set.Name)
	}
	t.Cleanup(func() { _, _ = DestroySets(names) }) // the netns is shared with other tests
	for name, b := range map[string]kernel.Sets{"ipset": &IPSets{}, "nftables": nft} {
		t.Run(name, func(t *testing.T) {
			for _, set := range sets {
				if err := b.EnsureSet(set); err != nil {
					t.Fatal(err)
				}
			}
			var ops []kernel.SetOp
			for _, c := range cases {
				ops = append(ops, c.op)
			}
			for i, err := range b.WriteEntries(ops) {
				w := cases[i].want
				if cases[i].nftOnly && name == "ipset" {
					w = lands
				}
				switch got := errors.Is(err, kernel.ErrRefused); {
				case w == lands && err != nil, w == fails && (err == nil || got), w == refused && !got,
					w == refusedIfFails && err != nil && !got:
					t.Errorf("%s %v: %v", ops[i].Set, ops[i].Entry, err)
				}
			}
			listed, err := b.ListEntries(ranges)
			if err != nil {
				t.Fatal(err)
			}
			if len(listed) < 2 {
				t.Errorf("%s holds %v: the writes beside the refused one did not land", ranges, listed)
			}
		})
	}
}
