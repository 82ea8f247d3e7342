package linux

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/moby/ipvs"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// BenchmarkIPVSDump dumps IPVS_BENCH_VS virtual servers (default 60,000: 30,000
// Services of the scale bench, half of them NodePorts on two node addresses) in the VM
// (`make bench-kernel`): ours, read as it streams in, against moby/ipvs's GetServices,
// which the daemon used before and which builds a struct and parses every attribute of
// every service. Allocations per virtual server are reported. Then the real servers of
// one virtual server (4), ours against moby/ipvs's GetDestinations: a periodic full sync
// reads those of a tenth of the virtual servers, one dump each.
func BenchmarkIPVSDump(b *testing.B) {
	kerneltest.RequireIPVS(b)
	n := 60000
	if v, err := strconv.Atoi(os.Getenv("IPVS_BENCH_VS")); err == nil && v > 0 {
		n = v
	}
	x, err := NewIPVS(time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ops := make([]kernel.VirtualServerOp, n)
	for i := range ops {
		a := netip.AddrFrom4([4]byte{10, 100 + byte(i>>16), byte(i >> 8), byte(i)})
		ops[i] = kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: a, Port: 80}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}}
	}
	start := time.Now()
	for _, err := range x.WriteVirtualServers(ops) {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d virtual servers created in %v", n, time.Since(start))
	defer func() {
		for i := range ops {
			ops[i].Kind = kernel.OpDelete
		}
		x.WriteVirtualServers(ops)
	}()
	dumpBench(b, "ipvs-proxier", n, func() (int, error) { vss, err := x.ListVirtualServers(); return len(vss), err })
	keys := make([]kernel.VSKey, n)
	for i := range ops {
		keys[i] = ops[i].VS.VSKey
	}
	// The same virtual servers looked up by key (IPVS_CMD_GET_SERVICE, batched), all of
	// them and a tenth: what a periodic full sync that does not dump reads instead.
	lookupBench := func(keys []kernel.VSKey) func() (int, error) {
		return func() (int, error) {
			vss, err := x.LookupVirtualServers(keys)
			found := 0
			for _, d := range vss {
				if d.Address.IsValid() {
					found++
				}
			}
			return found, err
		}
	}
	dumpBench(b, "lookup-all", n, lookupBench(keys))
	dumpBench(b, "lookup-tenth", n/10, lookupBench(keys[:n/10]))
	h, err := ipvs.New("")
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	dumpBench(b, "moby-ipvs", n, func() (int, error) { svcs, err := h.GetServices(); return len(svcs), err })
	key := ops[0].VS.VSKey
	var rss []kernel.RealServerOp
	for i := range 4 {
		rss = append(rss, kernel.RealServerOp{VS: key, RS: kernel.RealServer{Address: netip.AddrFrom4([4]byte{10, 244, 0, byte(i + 1)}), Port: 8080, Weight: 1}})
	}
	for _, err := range x.WriteRealServers(rss) {
		if err != nil {
			b.Fatal(err)
		}
	}
	dumpBench(b, "real-servers/ipvs-proxier", 4, func() (int, error) { rss, err := x.ListRealServers(key); return len(rss), err })
	svc := &ipvs.Service{AddressFamily: unix.AF_INET, Protocol: uint16(key.Protocol), Address: net.IP(key.Address.AsSlice()), Port: key.Port}
	dumpBench(b, "real-servers/moby-ipvs", 4, func() (int, error) { ds, err := h.GetDestinations(svc); return len(ds), err })
}

// dumpBench runs list, which must list want entries, as the sub-benchmark name, with
// its allocations per entry.
func dumpBench(b *testing.B, name string, want int, list func() (int, error)) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got, err := list(); err != nil || got != want {
				b.Fatalf("%d listed, want %d: %v", got, want, err)
			}
		}
		b.ReportMetric(testing.AllocsPerRun(1, func() { _, _ = list() })/float64(want), "allocs/entry")
	})
}
