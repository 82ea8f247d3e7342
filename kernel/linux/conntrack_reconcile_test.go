package linux

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	ct "github.com/ti-mo/conntrack"
	"github.com/ti-mo/netfilter"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestConntrackReconcileReal: ReconcileUDP sees only the family's UDP flows (the kernel
// filters TCP out: 300 TCP flows never reach stale) and deletes exactly those stale
// names.
func TestConntrackReconcileReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	conn, err := ct.Dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() }) // after the flows' deletes below (cleanups run last first)
	ap := netip.MustParseAddrPort
	mk := func(proto uint8, src, vip, ep netip.AddrPort) {
		t.Helper()
		f := ct.NewFlow(proto, 0, src.Addr(), vip.Addr(), src.Port(), vip.Port(), 120, 0)
		f.TupleReply.IP.SourceAddress, f.TupleReply.Proto.SourcePort = ep.Addr(), ep.Port()
		f.TupleReply.IP.DestinationAddress, f.TupleReply.Proto.DestinationPort = src.Addr(), src.Port()
		if proto == 6 {
			f.ProtoInfo.TCP = &ct.ProtoInfoTCP{State: 3} // ESTABLISHED
		}
		if err := conn.Create(f); err != nil {
			t.Fatalf("create flow: %v", err)
		}
		t.Cleanup(func() { _ = conn.Delete(f) }) // the netns's table is shared with the other tests
	}
	mk(17, ap("10.3.0.1:1000"), ap("10.97.0.10:53"), ap("10.244.0.5:53")) // live
	mk(17, ap("10.3.0.1:1001"), ap("10.97.0.10:53"), ap("10.244.0.6:53")) // stale
	mk(17, ap("10.3.0.1:1002"), ap("10.97.0.11:53"), ap("10.244.0.6:53")) // another VIP
	mk(17, ap("[fd00::1]:1000"), ap("[fd00:96::10]:53"), ap("[fd00:244::6]:53"))
	for i := range 300 {
		mk(6, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 4, byte(i >> 8), byte(i)}), 3000), ap("10.97.0.10:53"), ap("10.244.0.6:53"))
	}
	if _, err := (Conntrack{}).ReconcileUDP(kernel.IPv4, func(netip.AddrPort, netip.AddrPort) bool { return false }); errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	var seen []string
	received, n, err := reconcileUDP(kernel.IPv4, func(orig, reply netip.AddrPort) bool {
		seen = append(seen, orig.String()+">"+reply.String())
		return orig == ap("10.97.0.10:53") && reply != ap("10.244.0.5:53")
	})
	if err != nil || n != 1 || received != 3 {
		t.Fatalf("received %d deleted %d (%v), want the 3 IPv4 UDP flows and 1 deleted", received, n, err)
	}
	slices.Sort(seen)
	if want := []string{"10.97.0.10:53>10.244.0.5:53", "10.97.0.10:53>10.244.0.6:53", "10.97.0.11:53>10.244.0.6:53"}; !slices.Equal(seen, want) {
		t.Errorf("stale was asked about %v, want only the IPv4 UDP flows %v", seen, want)
	}
	fs, err := conn.DumpFilter(ct.NewFilter().Family(netfilter.ProtoIPv4), nil)
	if err != nil {
		t.Fatal(err)
	}
	var udp []string
	tcp := 0
	for _, f := range fs {
		if f.TupleOrig.Proto.Protocol == 6 {
			tcp++
			continue
		}
		udp = append(udp, netip.AddrPortFrom(f.TupleOrig.IP.DestinationAddress, f.TupleOrig.Proto.DestinationPort).String()+">"+
			netip.AddrPortFrom(f.TupleReply.IP.SourceAddress, f.TupleReply.Proto.SourcePort).String())
	}
	slices.Sort(udp)
	if want := []string{"10.97.0.10:53>10.244.0.5:53", "10.97.0.11:53>10.244.0.6:53"}; !slices.Equal(udp, want) || tcp != 300 {
		t.Errorf("left: UDP %v (want %v), %d TCP (want 300)", udp, want, tcp)
	}
}
