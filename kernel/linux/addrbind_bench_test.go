package linux

import (
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// BenchmarkAddressBinds binds IPVS_BENCH_ADDRS /32 addresses (default 30,000: a cold start
// at 30,000 Services binds one per ClusterIP) to one new interface with WriteAddresses, in
// batches of 1,000, and reports what a bind cost in the first batch and in the last. Each
// RTM_NEWADDR walks the interface's whole IPv4 address list (__inet_insert_ifa,
// net/ipv4/devinet.c: the duplicate check and the place of the last primary), so a bind
// costs in proportion to the addresses already there and a cold start's binds are
// quadratic: the last/first ratio shows it. A veth, not a dummy, so that it runs on a host
// without the dummy driver too (the list walked is the same): `make bench-kernel` in the
// VM, or on the host in a fresh netns:
// IPVS_PROXIER_TEST_NETNS=1 unshare -n go test ./kernel/linux -run '^$' -bench AddressBinds.
func BenchmarkAddressBinds(b *testing.B) {
	kerneltest.RequireNetns(b)
	n := 30000
	if v, err := strconv.Atoi(os.Getenv("IPVS_BENCH_ADDRS")); err == nil && v > 0 {
		n = v
	}
	const batch = 1000
	var first, last time.Duration
	for range b.N {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "bind0"}, PeerName: "bind1"}
		if err := netlink.LinkAdd(veth); err != nil {
			b.Fatal(err)
		}
		x := &Addresses{}
		for i := 0; i < n; i += batch {
			ops := make([]kernel.AddressOp, 0, batch)
			for j := i; j < min(i+batch, n); j++ {
				a := netip.AddrFrom4([4]byte{10, 96 + byte(j>>16), byte(j >> 8), byte(j)})
				ops = append(ops, kernel.AddressOp{Addr: a})
			}
			start := time.Now()
			for _, err := range x.WriteAddresses("bind0", ops) {
				if err != nil {
					b.Fatal(err)
				}
			}
			took := time.Since(start) / time.Duration(len(ops))
			if i == 0 {
				first = took
			}
			last = took
		}
		x.Close()
		if err := netlink.LinkDel(veth); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(first.Nanoseconds())/1000, "µs/bind-first")
	b.ReportMetric(float64(last.Nanoseconds())/1000, "µs/bind-last")
	b.ReportMetric(float64(last)/float64(first), "last/first")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9, "s/all")
}
