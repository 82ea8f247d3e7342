package linux

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestNlMsgIsNetlinkRequest: the batched writes' messages, built by appending (nlMsg),
// are byte for byte those nl.NetlinkRequest serializes (the ref* builders below, the
// writes' encoders before nlMsg), for every kind of op, both families, each set entry
// shape, and several in one buffer.
func TestNlMsgIsNetlinkRequest(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00::1")
	var vsOps []kernel.VirtualServerOp
	var rsOps []kernel.RealServerOp
	for _, a := range []netip.Addr{v4, v6, netip.AddrFrom16(v4.As16())} {
		for _, kind := range []kernel.OpKind{kernel.OpAdd, kernel.OpUpdate, kernel.OpDelete} {
			key := kernel.VSKey{Protocol: kernel.UDP, Address: a, Port: 53}
			vsOps = append(vsOps,
				kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: key, VSSettings: kernel.VSSettings{Scheduler: "rr"}}, Kind: kind},
				kernel.VirtualServerOp{VS: kernel.VirtualServer{VSKey: key, VSSettings: kernel.VSSettings{Scheduler: "mh", Flags: kernel.FlagPersistent | 0x10000, Timeout: 10800}}, Kind: kind})
			for _, rs := range []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fd00:10::7")} {
				rsOps = append(rsOps, kernel.RealServerOp{VS: key, RS: kernel.RealServer{Address: rs, Port: 8053, Weight: 3}, Kind: kind})
			}
		}
	}
	a4, b4, a6 := netip.MustParseAddr("10.1.0.1"), netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00::5")
	shapes := []kernel.SetEntry{
		{IP: a4},                                 // hash:ip
		{IP: b4, Protocol: kernel.TCP, Port: 80}, // hash:ip,port
		{IP: a4, Protocol: kernel.UDP, Port: 53, IP2: a4}, // hash:ip,port,ip
		{IP: a6, Protocol: kernel.SCTP, Port: 80, IP2: a6},
		{IP: b4, Protocol: kernel.TCP, Port: 443, Net: netip.MustParsePrefix("192.168.0.0/16")}, // hash:ip,port,net
		{IP: a6, Protocol: kernel.TCP, Port: 443, Net: netip.MustParsePrefix("fd00::/64")},
		{IP: netip.AddrFrom16(a4.As16()), Protocol: kernel.TCP, Port: 80}, // IPv4-mapped: sent as IPv4
	}
	var setOps []kernel.SetOp
	for i, e := range shapes {
		setOps = append(setOps, kernel.SetOp{Set: "KUBE-LOOP-BACK", Entry: e, Delete: i%2 == 1})
	}
	setOps = append(setOps, kernel.SetOp{Set: "KUBE-NODE-PORT-TCP", Entry: kernel.SetEntry{Port: 30080}})

	const family = 0x1d
	check := func(name string, n int, ref func(i int, seq uint32) []byte, got func(b []byte, i int, seq uint32) []byte) {
		t.Helper()
		var want, all []byte
		for i := range n {
			seq := uint32(100 + i)
			r := ref(i, seq)
			if g := got(nil, i, seq); !bytes.Equal(g, r) {
				t.Errorf("%s %d:\n got %x\nwant %x", name, i, g, r)
			}
			want = append(want, r...)
			all = got(all, i, seq)
		}
		if !bytes.Equal(all, want) {
			t.Errorf("%s: %d messages appended to one buffer differ from them one by one", name, n)
		}
	}
	// nl.Genlmsg serializes 4 bytes of its 2-byte struct, so the reference's genlmsghdr
	// reserved field is whatever memory follows; ours is zero, as the kernel's wants.
	genl := func(b []byte) []byte {
		clear(b[unix.SizeofNlMsghdr+2 : unix.SizeofNlMsghdr+4])
		return b
	}
	check("virtual server", len(vsOps), func(i int, seq uint32) []byte { return genl(refServiceMessage(family, vsOps[i], seq)) },
		func(b []byte, i int, seq uint32) []byte { return ipvsServiceMessage(b, family, vsOps[i], seq) })
	check("real server", len(rsOps), func(i int, seq uint32) []byte { return genl(refDestMessage(family, rsOps[i], seq)) },
		func(b []byte, i int, seq uint32) []byte { return ipvsDestMessage(b, family, rsOps[i], seq) })
	check("set member", len(setOps), func(i int, seq uint32) []byte { return refSetOpMessage(setOps[i], seq) },
		func(b []byte, i int, seq uint32) []byte { return ipsetOpMessage(b, setOps[i], seq) })
}

// BenchmarkDestMessage: building one real server's IPVS_CMD_NEW_DEST, as a cold start
// does 120,000 times at 30,000 Services.
func BenchmarkDestMessage(b *testing.B) {
	op := kernel.RealServerOp{VS: kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 80},
		RS: kernel.RealServer{Address: netip.MustParseAddr("10.1.2.3"), Port: 8080, Weight: 1}}
	b.Run("nlMsg", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf = ipvsDestMessage(buf[:0], 0x1d, op, 1)
		}
	})
	b.Run("NetlinkRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = refDestMessage(0x1d, op, 1)
		}
	})
}

// The encoders as they were written with nl.NetlinkRequest and nl.RtAttr: the
// reference TestNlMsgIsNetlinkRequest compares with.

func refServiceMessage(family uint16, op kernel.VirtualServerOp, seq uint32) []byte {
	req := refRequest(family, seq, [3]uint8{ipvsCmdNewSvc, ipvsCmdSetSvc, ipvsCmdDelSvc}, op.Kind == kernel.OpUpdate, op.Kind == kernel.OpDelete)
	vs := op.VS
	svc := serviceKeyAttr(vs.VSKey)
	if op.Kind != kernel.OpDelete {
		mask := uint32(0xffffffff)
		if vs.Address.Unmap().Is6() {
			mask = 128
		}
		flags := make([]byte, 8) // struct ip_vs_flags {flags, mask}, host order
		nl.NativeEndian().PutUint32(flags[0:4], vs.Flags&kernel.OwnFlags)
		nl.NativeEndian().PutUint32(flags[4:8], 0xffffffff)
		svc.AddRtAttr(ipvsSvcAttrSched, nl.ZeroTerminated(vs.Scheduler))
		svc.AddRtAttr(ipvsSvcAttrFlags, flags)
		svc.AddRtAttr(ipvsSvcAttrTimeout, nl.Uint32Attr(vs.Timeout))
		svc.AddRtAttr(ipvsSvcAttrNetmask, nl.Uint32Attr(mask))
	}
	req.AddData(svc)
	return req.Serialize()
}

func refRequest(family uint16, seq uint32, cmds [3]uint8, set, del bool) *nl.NetlinkRequest {
	req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: family, Flags: unix.NLM_F_REQUEST, Seq: seq}}
	req.AddData(&nl.Genlmsg{Command: ipvsCmd(cmds, set, del), Version: ipvsGenlVersion})
	return req
}

func refDestMessage(family uint16, op kernel.RealServerOp, seq uint32) []byte {
	req := refRequest(family, seq, [3]uint8{ipvsCmdNewDest, ipvsCmdSetDest, ipvsCmdDelDest}, op.Kind == kernel.OpUpdate, op.Kind == kernel.OpDelete)
	port := func(p uint16) []byte { return binary.BigEndian.AppendUint16(nil, p) }
	req.AddData(serviceKeyAttr(op.VS))
	dest := nl.NewRtAttr(ipvsCmdAttrDest, nil)
	dest.AddRtAttr(ipvsDestAttrAddr, op.RS.Address.Unmap().AsSlice())
	dest.AddRtAttr(ipvsDestAttrPort, port(op.RS.Port))
	dest.AddRtAttr(ipvsDestAttrFwdMethod, nl.Uint32Attr(ipvsConnFMasq))
	dest.AddRtAttr(ipvsDestAttrWeight, nl.Uint32Attr(uint32(op.RS.Weight)))
	dest.AddRtAttr(ipvsDestAttrUThresh, nl.Uint32Attr(0))
	dest.AddRtAttr(ipvsDestAttrLThresh, nl.Uint32Attr(0))
	req.AddData(dest)
	return req.Serialize()
}

func refSetOpMessage(op kernel.SetOp, seq uint32) []byte {
	cmd := nl.IPSET_CMD_ADD
	if op.Delete {
		cmd = nl.IPSET_CMD_DEL
	}
	req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: uint16(cmd | unix.NFNL_SUBSYS_IPSET<<8), Flags: unix.NLM_F_REQUEST, Seq: seq}}
	req.AddData(&nl.Nfgenmsg{NfgenFamily: uint8(unix.AF_NETLINK), Version: nl.NFNETLINK_V0, ResId: 0})
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_PROTOCOL, nl.Uint8Attr(nl.IPSET_PROTOCOL)))
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_SETNAME, nl.ZeroTerminated(op.Set)))
	data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
	e := op.Entry
	port := func() {
		b := make([]byte, 2)
		binary.BigEndian.PutUint16(b, e.Port)
		data.AddChild(nl.NewRtAttr(int(nl.IPSET_ATTR_PORT|nl.NLA_F_NET_BYTEORDER), b))
	}
	if !e.IP.IsValid() {
		port()
	} else {
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_IP|int(nl.NLA_F_NESTED), ipAttr(e.IP).Serialize()))
		if e.Protocol != 0 {
			data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_PROTO, nl.Uint8Attr(uint8(e.Protocol))))
			port()
		}
		switch {
		case e.IP2.IsValid():
			data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_IP2|int(nl.NLA_F_NESTED), ipAttr(e.IP2).Serialize()))
		case e.Net.IsValid():
			data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_IP2|int(nl.NLA_F_NESTED), ipAttr(e.Net.Addr()).Serialize()))
			data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_CIDR2, nl.Uint8Attr(uint8(e.Net.Bits()))))
		}
	}
	req.AddData(data)
	return req.Serialize()
}

// ipAttr is an address attribute in network byte order.
func ipAttr(a netip.Addr) *nl.RtAttr {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return nl.NewRtAttr(nl.IPSET_ATTR_IPADDR_IPV4|int(nl.NLA_F_NET_BYTEORDER), b[:])
	}
	b := a.As16()
	return nl.NewRtAttr(nl.IPSET_ATTR_IPADDR_IPV6|int(nl.NLA_F_NET_BYTEORDER), b[:])
}
