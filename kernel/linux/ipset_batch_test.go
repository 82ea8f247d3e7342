package linux

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestIPSetBatchReal: thousands of writes in batches over every entry shape; an add of
// a present member and a delete of an absent one succeed; a bad op (missing set, wrong
// family) fails alone, in the middle of a batch, and the ops after it still land.
func TestIPSetBatchReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	s := &IPSets{}
	var names []string
	for _, set := range proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}) {
		if err := s.EnsureSet(set); err != nil {
			t.Fatal(err)
		}
		names = append(names, set.Name)
	}
	t.Cleanup(func() { _, _ = DestroySets(names) }) // the netns is shared with other tests
	a := netip.MustParseAddr
	var ops []kernel.SetOp
	want := map[string][]kernel.SetEntry{}
	add := func(set string, e kernel.SetEntry) {
		ops = append(ops, kernel.SetOp{Set: set, Entry: e})
		want[set] = append(want[set], e)
	}
	for i := range 3000 {
		ip := netip.AddrFrom4([4]byte{10, 96, byte(i / 256), byte(i % 256)})
		add("KUBE-CLUSTER-IP", kernel.SetEntry{IP: ip, Protocol: kernel.TCP, Port: 80})
		if i%10 == 0 {
			pod := netip.AddrFrom4([4]byte{10, 244, byte(i / 256), byte(i % 256)})
			add("KUBE-LOOP-BACK", kernel.SetEntry{IP: pod, Protocol: kernel.UDP, Port: 53, IP2: pod})
			add("KUBE-LOAD-BALANCER-SOURCE-CIDR", kernel.SetEntry{IP: ip, Protocol: kernel.SCTP, Port: 80, Net: netip.PrefixFrom(pod, 24).Masked()})
			add("KUBE-NODE-PORT-TCP", kernel.SetEntry{Port: uint16(30000 + i/10)})
			add("KUBE-6-CLUSTER-IP", kernel.SetEntry{IP: a(fmt.Sprintf("fd00::%x", i)), Protocol: kernel.TCP, Port: 443})
		}
	}
	bad := len(ops)
	ops = append(ops,
		kernel.SetOp{Set: "KUBE-NO-SUCH-SET", Entry: kernel.SetEntry{IP: a("10.0.0.1")}},
		kernel.SetOp{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("fd00::1"), Protocol: kernel.TCP, Port: 80}}, // wrong family
	)
	add("KUBE-IPVS-IPS", kernel.SetEntry{IP: a("10.96.255.1")}) // after the bad ones
	errs := s.WriteEntries(ops)
	for i, err := range errs {
		if (err != nil) != (i == bad || i == bad+1) {
			t.Errorf("op %d %s: %v", i, opString(ops[i]), err)
		}
	}
	// Again, plus deletes of members present and absent: all succeed.
	again := append(slices.Clone(ops[:bad]), ops[len(ops)-1],
		kernel.SetOp{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("10.96.0.0"), Protocol: kernel.TCP, Port: 80}, Delete: true},
		kernel.SetOp{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a("10.99.0.0"), Protocol: kernel.TCP, Port: 80}, Delete: true})
	want["KUBE-CLUSTER-IP"] = want["KUBE-CLUSTER-IP"][1:]
	for i, err := range s.WriteEntries(again) {
		if err != nil {
			t.Errorf("repeat op %d %s: %v", i, opString(again[i]), err)
		}
	}
	for set, entries := range want {
		got, err := s.ListEntries(set)
		if err != nil {
			t.Fatal(err)
		}
		cmp := func(a, b kernel.SetEntry) int { return compareEntry(a, b) }
		slices.SortFunc(got, cmp)
		slices.SortFunc(entries, cmp)
		if !slices.Equal(got, entries) {
			t.Errorf("%s: %d entries, want %d", set, len(got), len(entries))
		}
	}
}

func compareEntry(a, b kernel.SetEntry) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	if a.Port != b.Port {
		return int(a.Port) - int(b.Port)
	}
	return a.IP2.Compare(b.IP2)
}
