package linux

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestIPSetCountReal: the header-only count matches the members, for a hash and a
// bitmap set, and a missing set is ErrNotFound.
func TestIPSetCountReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	s := &IPSets{}
	sets := []kernel.Set{
		{Name: "COUNT-HASH", Type: kernel.HashIPPort, Family: kernel.IPv4, MaxElem: 1024, HashSize: 64},
		{Name: "COUNT-BITMAP", Type: kernel.BitmapPort, Family: kernel.IPv4},
	}
	for _, set := range sets {
		if err := s.EnsureSet(set); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _, _ = DestroySets([]string{"COUNT-HASH", "COUNT-BITMAP"}) }()
	for i := range 37 {
		if err := addEntry("COUNT-HASH", kernel.SetEntry{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), Protocol: kernel.TCP, Port: 80}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []uint16{30001, 30002} {
		if err := addEntry("COUNT-BITMAP", kernel.SetEntry{Port: p}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]int{"COUNT-HASH": 37, "COUNT-BITMAP": 2} {
		if n, err := s.CountEntries(name); err != nil || n != want {
			t.Errorf("%s: count %d, %v; want %d", name, n, err, want)
		}
	}
	if _, err := s.CountEntries("NO-SUCH-SET"); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("missing set: %v, want ErrNotFound", err)
	}
}
