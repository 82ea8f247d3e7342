package ipvs

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestBusiestIsTheSortsHead: the heap selection keeps what a sort of every virtual
// server would put first, in its order, ties included; n = 0 keeps all.
func TestBusiestIsTheSortsHead(t *testing.T) {
	var owned []OwnedStats
	for i := range 2000 {
		k := kernel.VSKey{Protocol: kernel.TCP, Address: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: 80}
		owned = append(owned, OwnedStats{Key: k, Stats: kernel.VSStats{Connections: uint64((i * 7919) % 31)}})
	}
	want := slices.Clone(owned)
	slices.SortFunc(want, busier)
	for _, n := range []int{1, 2, 37, 500, 1999, 2000, 2500, 0} {
		b := NewBusiest(n, len(owned))
		for _, o := range owned {
			b.Offer(o)
		}
		keep := len(owned)
		if n > 0 {
			keep = min(n, keep)
		}
		if got := b.Sorted(); !slices.Equal(got, want[:keep]) {
			t.Errorf("n=%d: the selection differs from the sort's first %d", n, keep)
		}
	}
}
