package linux

import (
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// dumpAnswer is a service as a dump answers it: the attributes of our own
// IPVS_CMD_NEW_SERVICE (the kernel answers with that command and the same nesting) plus
// the counters, a fwmark, or a 16-byte address as the kernel sends.
func dumpAnswer(t *testing.T, vs kernel.VirtualServer, extra ...*nl.RtAttr) []byte {
	t.Helper()
	msg := ipvsServiceMessage(nil, 1, kernel.VirtualServerOp{VS: vs}, 1)
	attrs := msg[unix.SizeofNlMsghdr+4:]
	svc := nested(attrs, ipvsCmdAttrService)
	out := nl.NewRtAttr(ipvsCmdAttrService, nil)
	eachAttr(svc, func(typ uint16, v []byte) {
		if typ == ipvsSvcAttrAddr && len(v) == 4 {
			v = append(v[:4:4], make([]byte, 12)...) // union nf_inet_addr
		}
		out.AddRtAttr(int(typ), v)
	})
	for _, a := range extra {
		out.AddChild(a)
	}
	return out.Serialize()
}

func stats(typ int, conns, in, out, bytesIn, bytesOut uint64, wide bool) *nl.RtAttr {
	a := nl.NewRtAttr(typ, nil)
	for i, v := range []uint64{conns, in, out, bytesIn, bytesOut} {
		if wide || i >= 3 {
			a.AddRtAttr(ipvsStatsAttrConns+i, nl.Uint64Attr(v))
		} else {
			a.AddRtAttr(ipvsStatsAttrConns+i, nl.Uint32Attr(uint32(v)))
		}
	}
	return a
}

// TestParseService: a dumped service reads back as the virtual server written, its
// counters from IPVS_SVC_ATTR_STATS64 when the kernel sends it (3.18+) and from the
// 32-bit IPVS_SVC_ATTR_STATS otherwise; fwmark services are skipped.
func TestParseService(t *testing.T) {
	a := netip.MustParseAddr
	for _, vs := range []kernel.VirtualServer{
		{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: a("10.96.0.1"), Port: 443}, VSSettings: kernel.VSSettings{Scheduler: "rr"}},
		{VSKey: kernel.VSKey{Protocol: kernel.UDP, Address: a("fd00::a"), Port: 53}, VSSettings: kernel.VSSettings{Scheduler: "mh", Flags: kernel.FlagPersistent | kernel.FlagSched1, Timeout: 10800}},
		{VSKey: kernel.VSKey{Protocol: kernel.SCTP, Address: a("10.96.0.2"), Port: 9}, VSSettings: kernel.VSSettings{Scheduler: "custom"}},
	} {
		got, st, ok := parseService(dumpAnswer(t, vs, stats(ipvsSvcAttrStats, 1, 2, 3, 4, 5, false), stats(ipvsSvcAttrStats64, 1<<40, 7, 8, 9, 10, true)))
		if !ok || got != vs {
			t.Errorf("parsed %+v (ok %v), want %+v", got, ok, vs)
		}
		if want := (kernel.VSStats{Connections: 1 << 40, PacketsIn: 7, PacketsOut: 8, BytesIn: 9, BytesOut: 10}); st != want {
			t.Errorf("%s: stats %+v, want the 64-bit ones %+v", vs.VSKey, st, want)
		}
		_, st, _ = parseService(dumpAnswer(t, vs, stats(ipvsSvcAttrStats, 1, 2, 3, 4, 5, false)))
		if want := (kernel.VSStats{Connections: 1, PacketsIn: 2, PacketsOut: 3, BytesIn: 4, BytesOut: 5}); st != want {
			t.Errorf("%s: stats %+v, want the 32-bit ones %+v", vs.VSKey, st, want)
		}
	}
	fw := nl.NewRtAttr(ipvsSvcAttrFWMark, nl.Uint32Attr(7))
	if vs, _, ok := parseService(dumpAnswer(t, kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: a("10.0.0.1"), Port: 1}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}, fw)); ok {
		t.Errorf("fwmark service read as %+v", vs)
	}
	if _, _, ok := parseService([]byte{1, 2, 3}); ok {
		t.Error("garbage read as a service")
	}
}

// TestParseDest: a dumped destination reads back with its weight and connection counts,
// its family from IPVS_DEST_ATTR_ADDR_FAMILY or else its virtual server's.
func TestParseDest(t *testing.T) {
	vs := kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("fd00::1"), Port: 80}
	rs := kernel.RealServer{Address: netip.MustParseAddr("fd00::2"), Port: 8080, Weight: 3}
	msg := ipvsDestMessage(nil, 1, kernel.RealServerOp{VS: vs, RS: rs}, 1)
	attrs := msg[unix.SizeofNlMsghdr+4:]
	dest := nl.NewRtAttr(ipvsCmdAttrDest, nil)
	eachAttr(nested(attrs, ipvsCmdAttrDest), func(typ uint16, v []byte) { dest.AddRtAttr(int(typ), v) })
	dest.AddRtAttr(ipvsDestAttrActiveConns, nl.Uint32Attr(4))
	dest.AddRtAttr(ipvsDestAttrInactConns, nl.Uint32Attr(5))
	want := rs
	want.ActiveConns, want.InactiveConns = 4, 5
	if got, ok := parseDest(dest.Serialize(), unix.AF_INET6); !ok || got != want {
		t.Errorf("parsed %+v (ok %v), want %+v", got, ok, want)
	}
	dest.AddRtAttr(ipvsDestAttrAF, nl.Uint16Attr(unix.AF_INET6))
	if got, ok := parseDest(dest.Serialize(), unix.AF_INET); !ok || got != want {
		t.Errorf("with its own family: %+v (ok %v), want %+v", got, ok, want)
	}
}
