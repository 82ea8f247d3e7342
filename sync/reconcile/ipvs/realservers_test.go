package ipvs

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestRealServersAgreeWithAMap: random puts and deletes keep the slice sorted and equal
// to a map given the same operations; IPv4, IPv6 and IPv4-mapped IPv6 addresses come
// back from the compact form as they went in.
func TestRealServersAgreeWithAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var rs realServers
	ref := map[netip.AddrPort]kernel.RealServer{}
	for i := range 5000 {
		a := netip.AddrFrom4([4]byte{10, 0, 0, byte(r.IntN(40))})
		switch r.IntN(3) {
		case 1:
			a = netip.AddrFrom16([16]byte{0xfd, 15: byte(r.IntN(40))})
		case 2:
			a = netip.AddrFrom16(a.As16()) // ::ffff:10.0.0.x
		}
		ap := netip.AddrPortFrom(a, uint16(80+r.IntN(3)))
		if r.IntN(3) == 0 {
			rs.del(ap)
			delete(ref, ap)
		} else {
			s := kernel.RealServer{Address: ap.Addr(), Port: ap.Port(), Weight: int32(i)}
			rs.put(s)
			ref[ap] = s
		}
	}
	if len(rs) != len(ref) || !slices.IsSortedFunc(rs, func(a, b cachedRS) int { return a.addrPort().Compare(b.addrPort()) }) {
		t.Fatalf("len %d want %d, or unsorted", len(rs), len(ref))
	}
	for ap, want := range ref {
		if got, ok := rs.get(ap); !ok || got != want {
			t.Errorf("%v: %v %v, want %v", ap, got, ok, want)
		}
	}
}
