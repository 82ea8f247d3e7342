package proxier

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestMemberListRoundTrip: every shape of set entry the translation makes (address,
// address and port, port only, two addresses, a net; IPv4, IPv6 and IPv4-mapped IPv6)
// comes back unchanged and in order, and Equal tells lists apart by content.
func TestMemberListRoundTrip(t *testing.T) {
	v4, v6, mapped := netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fd00::1:2"), netip.MustParseAddr("::ffff:10.9.8.7")
	shapes := []kernel.SetEntry{
		{IP: v4},
		{IP: v6, Protocol: kernel.TCP, Port: 443},
		{Port: 30080},
		{IP: v4, Protocol: kernel.UDP, Port: 53, IP2: v4},
		{IP: v6, Protocol: kernel.SCTP, Port: 9, IP2: mapped},
		{IP: v4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("192.168.0.0/16")},
		{IP: v6, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("2001:db8::/32")},
		{Net: netip.MustParsePrefix("0.0.0.0/0")},
		{IP: mapped},
		{IP: v6, Protocol: kernel.TCP, Port: 1, IP2: v4}, // mixed families: not made, but packed faithfully
	}
	var ms []kernel.Member
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		e := shapes[i%len(shapes)]
		if e.Port != 0 {
			e.Port = uint16(r.IntN(65536))
		}
		ms = append(ms, kernel.Member{Set: []string{"KUBE-CLUSTER-IP", "KUBE-6-LOOP-BACK", "KUBE-NODE-PORT-TCP"}[r.IntN(3)], Entry: e})
	}
	l := PackMembers(ms)
	if got := l.Slice(); !slices.Equal(got, ms) {
		for i := range min(len(got), len(ms)) {
			if got[i] != ms[i] {
				t.Fatalf("member %d: got %+v, want %+v", i, got[i], ms[i])
			}
		}
		t.Fatalf("%d members back, want %d", len(got), len(ms))
	}
	if l.Len() != len(ms) || !l.Equal(PackMembers(slices.Clone(ms))) {
		t.Error("a list differs from itself")
	}
	other := slices.Clone(ms)
	other[7].Entry.Port++
	if l.Equal(PackMembers(other)) || l.Equal(MemberList{}) || !(MemberList{}).Equal(PackMembers(nil)) {
		t.Error("Equal does not compare contents")
	}
	if perMember := len(l.b) / len(ms); perMember > 24 {
		t.Errorf("%d bytes per member packed", perMember)
	}
}

// TestPackEntriesIsPackMembers: a set's listing packed with PackEntries is the list of
// its members PackMembers makes, and gives back the same entries in order.
func TestPackEntriesIsPackMembers(t *testing.T) {
	es := []kernel.SetEntry{
		{IP: netip.MustParseAddr("10.1.2.3"), Protocol: kernel.TCP, Port: 80},
		{IP: netip.MustParseAddr("10.1.2.4"), Protocol: kernel.UDP, Port: 53, IP2: netip.MustParseAddr("10.1.2.4")},
		{IP: netip.MustParseAddr("fd00::1"), Protocol: kernel.TCP, Port: 443, Net: netip.MustParsePrefix("fd00::/64")},
		{Port: 30080},
	}
	var ms []kernel.Member
	for _, e := range es {
		ms = append(ms, kernel.Member{Set: "KUBE-LOOP-BACK", Entry: e})
	}
	l := PackEntries("KUBE-LOOP-BACK", es)
	if !l.Equal(PackMembers(ms)) || !slices.Equal(l.Slice(), ms) {
		t.Errorf("PackEntries gave %v, want %v", l.Slice(), ms)
	}
	if PackEntries("KUBE-LOOP-BACK", nil).Len() != 0 {
		t.Error("an empty listing packs to a non-empty list")
	}
	var built MemberList
	for _, m := range ms {
		built = built.Append(m)
	}
	if !built.Equal(l) || built.Len() != len(ms) {
		t.Errorf("Append built %v (%d), want %v", built.Slice(), built.Len(), ms)
	}
}
