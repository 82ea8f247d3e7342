package linux

import (
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/moby/ipvs"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// BenchmarkIPVSDump dumps IPVS_BENCH_VS virtual servers (default 60,000: 30,000
// Services of the scale bench, half of them NodePorts on two node addresses) in the VM
// (`make bench-kernel`): ours, read as it streams in, against moby/ipvs's GetServices,
// which the daemon used before and which builds a struct and parses every attribute of
// every service. Allocations per virtual server are reported.
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
		ops[i] = kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: a, Port: 80}, Scheduler: "rr"}}
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
	b.Run("ipvs-proxier", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			vss, err := x.ListVirtualServers()
			if err != nil || len(vss) != n {
				b.Fatalf("%d virtual servers, %v", len(vss), err)
			}
		}
		b.ReportMetric(float64(testing.AllocsPerRun(1, func() { x.ListVirtualServers() }))/float64(n), "allocs/VS")
	})
	b.Run("moby-ipvs", func(b *testing.B) {
		h, err := ipvs.New("")
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		b.ReportAllocs()
		for b.Loop() {
			svcs, err := h.GetServices()
			if err != nil || len(svcs) != n {
				b.Fatalf("%d services, %v", len(svcs), err)
			}
		}
		b.ReportMetric(float64(testing.AllocsPerRun(1, func() { h.GetServices() }))/float64(n), "allocs/VS")
	})
}
