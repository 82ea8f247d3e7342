package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/mdlayher/netlink"
	"github.com/ti-mo/netfilter"
)

// ctnetlink message and attribute numbers (include/uapi/linux/netfilter/nfnetlink_conntrack.h).
const (
	ctMsgGet    = 1 // IPCTNL_MSG_CT_GET
	ctMsgDelete = 2 // IPCTNL_MSG_CT_DELETE

	ctaTupleOrig  = 1  // CTA_TUPLE_ORIG
	ctaTupleReply = 2  // CTA_TUPLE_REPLY
	ctaFilter     = 25 // CTA_FILTER, Linux 5.8+

	ctaTupleIP    = 1 // CTA_TUPLE_IP
	ctaTupleProto = 2 // CTA_TUPLE_PROTO

	ctaIPv4Src, ctaIPv4Dst, ctaIPv6Src, ctaIPv6Dst = 1, 2, 3, 4

	ctaProtoNum, ctaProtoSrcPort, ctaProtoDstPort = 1, 2, 3

	ctaFilterOrigFlags, ctaFilterReplyFlags = 1, 2

	// CTA_FILTER_FLAG(...) bits: which tuple fields the kernel compares.
	filterIPSrc, filterIPDst, filterProtoNum, filterProtoSrcPort, filterProtoDstPort = 1 << 0, 1 << 1, 1 << 3, 1 << 4, 1 << 5
)

// clearUDPFiltered deletes UDP flows to vip (and from endpoint, when valid) using a
// kernel-side filtered dump (CTA_FILTER, Linux 5.8): only matching flows cross into
// user space, so memory is bounded by the flows being deleted, never the table
// (kubernetes#129982). Each flow is checked again here before it is deleted.
// It returns how many flows the kernel sent and how many were deleted.
func clearUDPFiltered(vip, endpoint netip.AddrPort) (received, deleted int, err error) {
	c, err := netfilter.Dial(nil)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	fam := netfilter.ProtoIPv4
	if vip.Addr().Is6() {
		fam = netfilter.ProtoIPv6
	}
	ipAttr := func(typ uint16, a netip.Addr) netfilter.Attribute {
		if a.Is6() {
			typ += 2 // CTA_IP_V6_* follow CTA_IP_V4_*
		}
		return netfilter.Attribute{Type: typ, Data: a.AsSlice()}
	}
	udp := netfilter.Attribute{Type: ctaProtoNum, Data: []byte{syscall.IPPROTO_UDP}}
	orig := netfilter.Attribute{Type: ctaTupleOrig, Nested: true, Children: []netfilter.Attribute{
		{Type: ctaTupleIP, Nested: true, Children: []netfilter.Attribute{ipAttr(ctaIPv4Dst, vip.Addr())}},
		{Type: ctaTupleProto, Nested: true, Children: []netfilter.Attribute{udp, {Type: ctaProtoDstPort, Data: netfilter.Uint16Bytes(vip.Port())}}},
	}}
	origFlags, replyFlags := uint32(filterIPDst|filterProtoNum|filterProtoDstPort), uint32(0)
	attrs := []netfilter.Attribute{orig}
	if endpoint.IsValid() {
		attrs = append(attrs, netfilter.Attribute{Type: ctaTupleReply, Nested: true, Children: []netfilter.Attribute{
			{Type: ctaTupleIP, Nested: true, Children: []netfilter.Attribute{ipAttr(ctaIPv4Src, endpoint.Addr())}},
			{Type: ctaTupleProto, Nested: true, Children: []netfilter.Attribute{udp, {Type: ctaProtoSrcPort, Data: netfilter.Uint16Bytes(endpoint.Port())}}},
		}})
		replyFlags = filterIPSrc | filterProtoNum | filterProtoSrcPort
	}
	attrs = append(attrs, netfilter.Attribute{Type: ctaFilter, Nested: true, Children: []netfilter.Attribute{
		{Type: ctaFilterOrigFlags, Data: nativeUint32(origFlags)},
		{Type: ctaFilterReplyFlags, Data: nativeUint32(replyFlags)},
	}})
	return dumpAndDelete(c, fam, attrs, func(o, r netfilter.Attribute) bool {
		// The kernel should not send others; never delete what we did not ask for.
		return tupleMatches(o, vip, true) && (!endpoint.IsValid() || tupleMatches(r, endpoint, false))
	})
}

// dumpAndDelete sends a filtered conntrack dump of family fam with attrs (the filter) and
// deletes each flow whose original and reply tuples del accepts, one request each. It
// returns how many flows the kernel sent and how many were deleted; a flow gone before
// its delete counts as deleted.
func dumpAndDelete(c *netfilter.Conn, fam netfilter.ProtoFamily, attrs []netfilter.Attribute, del func(orig, reply netfilter.Attribute) bool) (received, deleted int, err error) {
	req, err := netfilter.MarshalNetlink(netfilter.Header{SubsystemID: netfilter.NFSubsysCTNetlink, MessageType: ctMsgGet,
		Family: fam, Flags: netlink.Request | netlink.Dump}, attrs)
	if err != nil {
		return 0, 0, err
	}
	msgs, err := c.Query(req)
	if err != nil {
		return 0, 0, fmt.Errorf("conntrack filtered dump: %w", err)
	}
	received = len(msgs)
	for _, m := range msgs {
		_, got, err := netfilter.UnmarshalNetlink(m)
		if err != nil {
			continue
		}
		o, r := findAttr(got, ctaTupleOrig), findAttr(got, ctaTupleReply)
		if o == nil || r == nil || !del(*o, *r) {
			continue
		}
		req, err := netfilter.MarshalNetlink(netfilter.Header{SubsystemID: netfilter.NFSubsysCTNetlink, MessageType: ctMsgDelete,
			Family: fam, Flags: netlink.Request | netlink.Acknowledge}, []netfilter.Attribute{*o})
		if err != nil {
			return received, deleted, err
		}
		if _, err := c.Query(req); err != nil && !errors.Is(err, syscall.ENOENT) {
			return received, deleted, fmt.Errorf("conntrack delete: %w", err)
		}
		deleted++
	}
	return received, deleted, nil
}

func nativeUint32(v uint32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, v)
	return b
}

func findAttr(attrs []netfilter.Attribute, typ uint16) *netfilter.Attribute {
	for i := range attrs {
		if attrs[i].Type == typ {
			return &attrs[i]
		}
	}
	return nil
}

// tupleMatches checks a UDP tuple's destination (dst) or source address and port.
func tupleMatches(tuple netfilter.Attribute, want netip.AddrPort, dst bool) bool {
	got, ok := udpTupleAddr(tuple, dst, want.Addr().Is6())
	return ok && got == want
}
