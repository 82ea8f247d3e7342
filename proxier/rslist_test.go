package proxier

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestRealServerListIsASortedList: a packed list yields what sorting and de-duplicating
// its destinations gives, each with weight 1, IPv4 and IPv6 alike; an IPv4 real server
// takes 7 bytes.
func TestRealServerListIsASortedList(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	addr := func() netip.Addr {
		if r.IntN(3) == 0 {
			return netip.AddrFrom16([16]byte{0xfd, 15: byte(r.IntN(4))})
		}
		return netip.AddrFrom4([4]byte{10, 0, byte(r.IntN(2)), byte(r.IntN(200))})
	}
	for round := range 200 {
		var dests []netip.AddrPort
		for range r.IntN(12) {
			dests = append(dests, netip.AddrPortFrom(addr(), uint16(r.IntN(3)*65000+80)))
		}
		l := PackRealServers(slices.Clone(dests)) // it sorts what it is given
		var want []kernel.RealServer
		for _, d := range dests {
			want = append(want, kernel.RealServer{Address: d.Addr(), Port: d.Port(), Weight: 1})
		}
		slices.SortFunc(want, kernel.CompareRealServers)
		want = slices.Compact(want)
		if got := l.Slice(); !slices.Equal(got, want) || l.Len() != len(want) || l.Empty() != (len(want) == 0) {
			t.Fatalf("round %d: %v packed as %v (len %d), want %v", round, dests, got, l.Len(), want)
		}
		again := make([]netip.AddrPort, len(want))
		for i, rs := range want {
			again[len(want)-1-i] = rs.AddrPort() // reversed: the order given does not matter
		}
		if !PackRealServers(again).Equal(l) {
			t.Fatalf("round %d: %v packed again differs from the packed list", round, want)
		}
	}
	v4 := PackRealServers([]netip.AddrPort{netip.MustParseAddrPort("10.0.0.2:8080"), netip.MustParseAddrPort("10.0.0.1:80")})
	if len(v4.b) != 14 || v4.String() != "[10.0.0.1:80 10.0.0.2:8080]" {
		t.Errorf("two IPv4 real servers take %d bytes, printed %s", len(v4.b), v4)
	}
	if PackRealServers(nil).Equal(v4) || !PackRealServers(nil).Equal(RealServerList{}) {
		t.Error("the empty list")
	}
	if l := PackRealServers([]netip.AddrPort{{}, netip.MustParseAddrPort("10.0.0.1:80")}); l.String() != "[10.0.0.1:80]" {
		t.Errorf("an invalid address packed: %s", l)
	}
}
