package linux

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestLocalAddressesSkipsTheDummyReal: the node's addresses come back without those of
// the skipped interface (the dummy), and the kernel is not asked for the skipped
// interface's addresses at all: 300 of them there, far fewer read.
func TestLocalAddressesSkipsTheDummyReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	addVeth(t, "local0", "localskip")
	node := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")}
	for _, a := range node {
		if err := bind("local0", a); err != nil {
			t.Fatal(err)
		}
	}
	var ops []kernel.AddressOp
	for i := range 300 {
		ops = append(ops, kernel.AddressOp{Addr: netip.AddrFrom4([4]byte{10, 96, byte(i / 256), byte(i % 256)})})
	}
	for i, err := range (&Addresses{}).WriteAddresses("localskip", ops) {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	before := addressesReadBy(&localDump)
	got, err := LocalAddresses("localskip")
	if err != nil {
		t.Fatal(err)
	}
	read := addressesReadBy(&localDump) - before
	for _, a := range node {
		if !slices.Contains(got, a) {
			t.Errorf("%s missing from %v", a, got)
		}
	}
	for _, op := range ops {
		if slices.Contains(got, op.Addr) {
			t.Errorf("%s of the skipped interface returned", op.Addr)
			break
		}
	}
	if read >= 300 {
		t.Errorf("%d addresses read to return %d: the skipped interface's were dumped", read, len(got))
	}
}

// addressesReadBy is how many addresses c's dumps have parsed so far.
func addressesReadBy(c *routeConn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read
}
