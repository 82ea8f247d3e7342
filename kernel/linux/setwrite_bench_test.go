package linux

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// BenchmarkSetWrites writes a cold start's set members, IPVS_BENCH_MEMBERS of them
// (default 230,000: 30,000 Services × 4 endpoints fill the sets with about that many),
// into fresh sets, with each backend (`make bench-kernel`): ipsets over netlink, and the
// nftables table in transactions of at most DefaultNftBatch members, none of which may
// fail. For nftables it reports the transactions and the longest one: the time the
// kernel held its nfnl lock at a stretch (kube-proxy's nftables mode writes a cold start
// as one transaction, and stalls the kernel at 30,000+ Services: kubernetes#139513,
// #135639).
func BenchmarkSetWrites(b *testing.B) {
	kerneltest.RequireNetns(b)
	n := 230000
	if v, err := strconv.Atoi(os.Getenv("IPVS_BENCH_MEMBERS")); err == nil && v > 0 {
		n = v
	}
	ops := make([]kernel.SetOp, n)
	for i := range ops {
		a := netip.AddrFrom4([4]byte{10, 100 + byte(i>>16), byte(i >> 8), byte(i)})
		ops[i] = kernel.SetOp{Set: "KUBE-CLUSTER-IP", Entry: kernel.SetEntry{IP: a, Protocol: kernel.TCP, Port: 80}}
	}
	sets := []kernel.Set{{Name: "KUBE-CLUSTER-IP", Type: kernel.HashIPPort, Family: kernel.IPv4, MaxElem: proxier.SetCapacity(n), HashSize: 1024}}
	b.Run("ipset", func(b *testing.B) {
		for range b.N {
			x := &IPSets{}
			for _, s := range sets {
				if err := x.EnsureSet(s); err != nil {
					b.Fatal(err)
				}
			}
			writeAll(b, x, ops)
			if _, err := DestroySets([]string{"KUBE-CLUSTER-IP"}); err != nil {
				b.Fatal(err)
			}
			x.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
	})
	b.Run("nftables", func(b *testing.B) {
		var st NftStats
		for range b.N {
			x := NewNftables("ipvs-proxier-bench")
			for _, s := range sets {
				if err := x.EnsureSet(s); err != nil {
					b.Fatal(err)
				}
			}
			writeAll(b, x, ops)
			st = x.Stats()
			if _, err := x.DeleteTables(); err != nil {
				b.Fatal(err)
			}
			x.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		b.ReportMetric(float64(st.Transactions), "transactions")
		b.ReportMetric(float64(st.Longest.Microseconds())/1000, "ms-longest-transaction")
		b.Logf("%d members: %d transactions, at most %d members, the longest %v, %d redone one by one", n, st.Transactions, st.LargestMembers, st.Longest.Round(time.Millisecond), st.Redone)
		if st.Redone > 0 {
			b.Errorf("%d transactions failed and were redone member by member", st.Redone)
		}
	})
}

// writeAll writes ops, failing b on any error.
func writeAll(b *testing.B, x kernel.Sets, ops []kernel.SetOp) {
	b.Helper()
	for i, err := range x.WriteEntries(ops) {
		if err != nil {
			b.Fatal(fmt.Errorf("op %d: %w", i, err))
		}
	}
}
