package proxier

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestCheckListedIsHasMember: CheckListed counts and reports a listing's members as
// asking HasMember of each does, for every shape of entry (an address or two or none,
// a net, IPv6), desired or not, in a set the desired state has or not.
func TestCheckListedIsHasMember(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	addr := func() netip.Addr {
		switch r.IntN(4) {
		case 0:
			return netip.Addr{}
		case 1:
			return netip.AddrFrom16([16]byte{0xfd, 15: byte(r.IntN(3))})
		}
		return netip.AddrFrom4([4]byte{10, 0, 0, byte(r.IntN(4))})
	}
	entry := func() kernel.SetEntry {
		e := kernel.SetEntry{IP: addr(), IP2: addr(), Port: uint16(r.IntN(3)), Protocol: kernel.Protocol(r.IntN(2) * 6)}
		if r.IntN(4) == 0 {
			e.Net = netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, byte(r.IntN(2))}), 24)
		}
		return e
	}
	for round := range 100 {
		d := NewDesired()
		for range r.IntN(40) {
			d.addMember(kernel.Member{Set: "KUBE-A", Entry: entry()}, NewDelta())
		}
		set := []string{"KUBE-A", "KUBE-NONE"}[r.IntN(2)]
		var listed []kernel.SetEntry
		for range r.IntN(40) {
			listed = append(listed, entry())
		}
		l := PackEntries(set, listed)
		var gotUnwanted, wantUnwanted []kernel.SetEntry
		got := d.CheckListed(set, l, func(e kernel.SetEntry) { gotUnwanted = append(gotUnwanted, e) })
		want := 0
		for m := range l.All() {
			if d.HasMember(m) {
				want++
			} else {
				wantUnwanted = append(wantUnwanted, m.Entry)
			}
		}
		if got != want || !slices.Equal(gotUnwanted, wantUnwanted) {
			t.Fatalf("round %d, set %s: CheckListed %d wanted, unwanted %v; HasMember %d, %v", round, set, got, gotUnwanted, want, wantUnwanted)
		}
	}
}

// BenchmarkCheckListed: the heavy round's repair of a KUBE-LOOP-BACK-like set of
// 120,000 members (endpoint, port, endpoint), all desired: CheckListed against asking
// HasMember of each decoded member, in one run (the ratio is what to read).
func BenchmarkCheckListed(b *testing.B) {
	d := NewDesired()
	var listed []kernel.SetEntry
	for i := range 120000 {
		a := netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
		e := kernel.SetEntry{IP: a, IP2: a, Port: 8080, Protocol: kernel.TCP}
		d.addMember(kernel.Member{Set: "KUBE-LOOP-BACK", Entry: e}, NewDelta())
		listed = append(listed, e)
	}
	l := PackEntries("KUBE-LOOP-BACK", listed)
	b.Run("packed", func(b *testing.B) {
		for b.Loop() {
			if d.CheckListed("KUBE-LOOP-BACK", l, func(kernel.SetEntry) {}) != len(listed) {
				b.Fatal("not all wanted")
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for m := range l.All() {
				if d.HasMember(m) {
					n++
				}
			}
			if n != len(listed) {
				b.Fatal("not all wanted")
			}
		}
	})
}
