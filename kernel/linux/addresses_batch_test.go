package linux

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestWriteAddressesReal: two thousand addresses of both families bound in batches,
// binding again and unbinding absent ones succeed, a missing device fails every op.
func TestWriteAddressesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	addVeth(t, "batch0", "batch1")
	x := &Addresses{}
	var ops []kernel.AddressOp
	var want []netip.Addr
	for i := range 1000 {
		for _, a := range []netip.Addr{netip.AddrFrom4([4]byte{10, 96, byte(i / 256), byte(i % 256)}), netip.MustParseAddr(fmt.Sprintf("fd00:96::%x", i))} {
			ops = append(ops, kernel.AddressOp{Addr: a})
			want = append(want, a)
		}
	}
	for i, err := range x.WriteAddresses("batch0", ops) {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	again := append(slices.Clone(ops[:10]),
		kernel.AddressOp{Addr: want[0], Unbind: true}, kernel.AddressOp{Addr: netip.MustParseAddr("10.99.0.1"), Unbind: true})
	want = want[1:]
	for i, err := range x.WriteAddresses("batch0", again) {
		if err != nil {
			t.Errorf("repeat op %d %v: %v", i, again[i], err)
		}
	}
	got, err := x.ListAddresses("batch0")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, netip.Addr.Compare)
	slices.SortFunc(want, netip.Addr.Compare)
	if !slices.Equal(got, want) {
		t.Errorf("%d addresses listed, want %d", len(got), len(want))
	}
	for _, err := range x.WriteAddresses("nosuchdev", ops[:3]) {
		if err == nil {
			t.Error("op on a missing device succeeded")
		}
	}
}
