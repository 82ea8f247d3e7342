package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/ti-mo/netfilter"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// ReconcileUDP implements kernel.Conntrack: one kernel-filtered dump of the family's UDP
// flows (CTA_FILTER on the protocol, Linux 5.8+: TCP flows, most of a busy table, never
// cross into user space; kubernetes#129982), and a delete of each flow stale reports.
// On older kernels the filter is ignored and the dump would be the whole table, so it
// returns errors.ErrUnsupported instead.
func (Conntrack) ReconcileUDP(f kernel.Family, stale func(orig, reply netip.AddrPort) bool) (int, error) {
	if major, minor, err := HostSysctls.KernelVersion(); err != nil || major < 5 || major == 5 && minor < 8 {
		return 0, fmt.Errorf("conntrack reconcile needs Linux 5.8+ (CTA_FILTER): %w", errors.ErrUnsupported)
	}
	_, deleted, err := reconcileUDP(f, stale)
	return deleted, err
}

// reconcileUDP is ReconcileUDP, also returning how many flows the kernel sent.
func reconcileUDP(f kernel.Family, stale func(orig, reply netip.AddrPort) bool) (received, deleted int, err error) {
	c, err := netfilter.Dial(nil)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	fam := netfilter.ProtoIPv4
	if f == kernel.IPv6 {
		fam = netfilter.ProtoIPv6
	}
	udp := netfilter.Attribute{Type: ctaProtoNum, Data: []byte{syscall.IPPROTO_UDP}}
	v6 := f == kernel.IPv6
	return dumpAndDelete(c, fam, []netfilter.Attribute{
		{Type: ctaTupleOrig, Nested: true, Children: []netfilter.Attribute{{Type: ctaTupleProto, Nested: true, Children: []netfilter.Attribute{udp}}}},
		{Type: ctaFilter, Nested: true, Children: []netfilter.Attribute{
			{Type: ctaFilterOrigFlags, Data: nativeUint32(filterProtoNum)},
			{Type: ctaFilterReplyFlags, Data: nativeUint32(0)},
		}},
	}, func(o, r netfilter.Attribute) bool {
		orig, ok1 := udpTupleAddr(o, true, v6)
		reply, ok2 := udpTupleAddr(r, false, v6)
		return ok1 && ok2 && stale(orig, reply) // else not UDP (the kernel should not send it), or wanted
	})
}

// udpTupleAddr returns a UDP tuple's destination (dst) or source address and port.
func udpTupleAddr(tuple netfilter.Attribute, dst, v6 bool) (netip.AddrPort, bool) {
	ip, proto := findAttr(tuple.Children, ctaTupleIP), findAttr(tuple.Children, ctaTupleProto)
	if ip == nil || proto == nil {
		return netip.AddrPort{}, false
	}
	ipType, portType := uint16(ctaIPv4Src), uint16(ctaProtoSrcPort)
	if dst {
		ipType, portType = ctaIPv4Dst, ctaProtoDstPort
	}
	if v6 {
		ipType += 2
	}
	a, n, p := findAttr(ip.Children, ipType), findAttr(proto.Children, ctaProtoNum), findAttr(proto.Children, portType)
	if a == nil || n == nil || p == nil || len(n.Data) != 1 || n.Data[0] != syscall.IPPROTO_UDP || len(p.Data) != 2 {
		return netip.AddrPort{}, false
	}
	addr, ok := netip.AddrFromSlice(a.Data)
	if !ok {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(addr.Unmap(), binary.BigEndian.Uint16(p.Data)), true
}
