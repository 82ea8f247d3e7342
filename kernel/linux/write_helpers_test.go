package linux

import (
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The seam writes only in batches; these send one op, for tests that set a kernel up.

var (
	testAddrs = &Addresses{}
	testSets  = &IPSets{}
)

func writeVS(x *IPVS, kind kernel.OpKind, vs kernel.VirtualServer) error {
	return x.WriteVirtualServers([]kernel.VirtualServerOp{{VS: vs, Kind: kind}})[0]
}

func writeRS(x *IPVS, kind kernel.OpKind, k kernel.VSKey, rs kernel.RealServer) error {
	return x.WriteRealServers([]kernel.RealServerOp{{VS: k, RS: rs, Kind: kind}})[0]
}

func bind(dev string, a netip.Addr) error {
	return testAddrs.WriteAddresses(dev, []kernel.AddressOp{{Addr: a}})[0]
}

func unbind(dev string, a netip.Addr) error {
	return testAddrs.WriteAddresses(dev, []kernel.AddressOp{{Addr: a, Unbind: true}})[0]
}

func addEntry(set string, e kernel.SetEntry) error {
	return testSets.WriteEntries([]kernel.SetOp{{Set: set, Entry: e}})[0]
}

func delEntry(set string, e kernel.SetEntry) error {
	return testSets.WriteEntries([]kernel.SetOp{{Set: set, Entry: e, Delete: true}})[0]
}

// addVeth makes a veth pair in the test's netns, deleted when the test ends.
func addVeth(t *testing.T, name, peer string) {
	t.Helper()
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
}
