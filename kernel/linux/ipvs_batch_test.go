package linux

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestIPVSBatchReal: virtual servers created in one batch, one with an unknown scheduler
// failing alone; hundreds of real servers over IPv4 and IPv6 virtual servers in batches;
// an add of a present one updates it, a delete of an absent one succeeds, an op on a
// missing virtual server fails alone and the ops after it land.
func TestIPVSBatchReal(t *testing.T) {
	x := ipvsForTest(t)
	a := netip.MustParseAddr
	keys := []kernel.VSKey{
		{Protocol: kernel.TCP, Address: a("10.96.5.1"), Port: 80},
		{Protocol: kernel.UDP, Address: a("10.96.5.2"), Port: 53},
		{Protocol: kernel.TCP, Address: a("fd00:96::5"), Port: 443},
	}
	var vsOps, dels []kernel.VirtualServerOp
	for i, k := range keys {
		vsOps = append(vsOps, kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: k, VSSettings: kernel.VSSettings{Scheduler: "rr"}}})
		dels = append(dels, kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: k}, Kind: kernel.OpDelete})
		if i == 0 { // an unknown scheduler fails alone; the ops after it land
			bogus := kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: a("10.96.5.3"), Port: 80}, VSSettings: kernel.VSSettings{Scheduler: "bogus"}}
			vsOps = append(vsOps, kernel.VirtualServerOp{VS: bogus})
		}
	}
	vsOps = append(vsOps, vsOps[0]) // a second add of a present one: ErrExist
	t.Cleanup(func() { x.WriteVirtualServers(dels) })
	for i, err := range x.WriteVirtualServers(vsOps) {
		switch {
		case i == 1 && !errors.Is(err, kernel.ErrNotFound):
			t.Errorf("unknown scheduler: %v, want ErrNotFound (the module does not load)", err)
		case i == len(vsOps)-1 && !errors.Is(err, kernel.ErrExist):
			t.Errorf("second add: %v, want ErrExist", err)
		case i != 1 && i != len(vsOps)-1 && err != nil:
			t.Errorf("virtual server op %d: %v", i, err)
		}
	}
	if vss, _ := x.ListVirtualServers(); len(vss) != len(keys) {
		t.Errorf("%d virtual servers after the batch, want %d: %+v", len(vss), len(keys), vss)
	}
	want := map[kernel.VSKey][]kernel.RealServer{}
	var ops []kernel.RealServerOp
	for i := range 300 {
		for _, k := range keys {
			ip := netip.AddrFrom4([4]byte{10, 244, byte(i / 256), byte(i % 256)})
			if k.Address.Is6() {
				ip = a(fmt.Sprintf("fd00:244::%x", i))
			}
			rs := kernel.RealServer{Address: ip, Port: 8080, Weight: 1}
			ops = append(ops, kernel.RealServerOp{VS: k, RS: rs})
			want[k] = append(want[k], rs)
		}
	}
	missing := kernel.VSKey{Protocol: kernel.TCP, Address: a("10.96.5.99"), Port: 80}
	bad := len(ops)
	ops = append(ops, kernel.RealServerOp{VS: missing, RS: kernel.RealServer{Address: a("10.244.9.9"), Port: 80, Weight: 1}})
	// After the bad op: an add of a present one with a new weight (an update), a new one.
	ops = append(ops, kernel.RealServerOp{VS: keys[0], RS: kernel.RealServer{Address: a("10.244.0.0"), Port: 8080, Weight: 7}},
		kernel.RealServerOp{VS: keys[0], RS: kernel.RealServer{Address: a("10.244.9.1"), Port: 8080, Weight: 1}})
	want[keys[0]][0].Weight = 7
	want[keys[0]] = append(want[keys[0]], kernel.RealServer{Address: a("10.244.9.1"), Port: 8080, Weight: 1})
	errs := x.WriteRealServers(ops)
	for i, err := range errs {
		if (err != nil) != (i == bad) {
			t.Errorf("op %d %s: %v", i, rsOpString(ops[i]), err)
		}
	}
	// Deletes, present and absent, and an update.
	more := []kernel.RealServerOp{
		{VS: keys[1], RS: want[keys[1]][0], Kind: kernel.OpDelete},
		{VS: keys[1], RS: kernel.RealServer{Address: a("10.244.99.99"), Port: 8080}, Kind: kernel.OpDelete},
		{VS: keys[2], RS: kernel.RealServer{Address: want[keys[2]][1].Address, Port: 8080, Weight: 0}, Kind: kernel.OpUpdate},
	}
	want[keys[1]] = want[keys[1]][1:]
	want[keys[2]][1].Weight = 0
	for i, err := range x.WriteRealServers(more) {
		if err != nil {
			t.Errorf("op %d %s: %v", i, rsOpString(more[i]), err)
		}
	}
	for _, k := range keys {
		got, err := x.ListRealServers(k)
		must(t, err)
		strip := func(rss []kernel.RealServer) []string {
			var out []string
			for _, r := range rss {
				out = append(out, fmt.Sprintf("%s w%d", r.AddrPort(), r.Weight))
			}
			slices.Sort(out)
			return out
		}
		if g, w := strip(got), strip(want[k]); !slices.Equal(g, w) {
			t.Errorf("%s: %d real servers, want %d\n%s", k, len(g), len(w), strings.Join(g[:min(5, len(g))], "\n"))
		}
	}
}
