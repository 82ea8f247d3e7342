package linux

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// WriteEntries implements kernel.IPSets. The writes travel as netlink batches
// (sendBatch), where kube-proxy execs `ipset` once per entry and the library's calls cost
// a round trip each: a cold start of 10,000 Services writes 66,000 entries. Without
// NLM_F_EXCL the kernel itself treats adding a present entry or deleting an absent one
// as success (ip_set_core.c, IPSET_FLAG_EXIST), as `ipset -exist` does.
func (x *IPSets) WriteEntries(ops []kernel.SetOp) []error {
	var errs []error
	err := x.conn.with(func(_ *netlink.Handle, raw map[int]*nl.SocketHandle) error {
		var sockErr error
		errs, sockErr = sendBatch(raw[unix.NETLINK_NETFILTER], len(ops),
			func(i int, seq uint32) []byte { return ipsetOpMessage(ops[i], seq) },
			func(i int, en syscall.Errno) error { return opError(ops[i], en) })
		return sockErr // a broken socket is replaced
	})
	if errs == nil { // no socket
		errs = make([]error, len(ops))
		for i := range errs {
			errs[i] = fmt.Errorf("%s: %w", opString(ops[i]), err)
		}
	}
	return errs
}

// ipsetOpMessage encodes one add or delete as IPSET_CMD_ADD/DEL, attributes as the
// ipset tool sends them (ip_set.h): the address nested in IPSET_ATTR_IP, the port in
// network byte order with its protocol, the second address (or net and its cidr) in
// IPSET_ATTR_IP2/CIDR2; a bitmap:port entry is the port alone.
func ipsetOpMessage(op kernel.SetOp, seq uint32) []byte {
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

func opString(op kernel.SetOp) string {
	if op.Delete {
		return "delete " + op.Entry.String() + " from " + op.Set
	}
	return "add " + op.Entry.String() + " to " + op.Set
}

// opError turns the kernel's answer into an error naming the op; ipset's own codes
// (4096 and up) read as ipset does.
func opError(op kernel.SetOp, en syscall.Errno) error {
	if en >= nl.IPSET_ERR_PRIVATE {
		if en == nl.IPSET_ERR_EXIST {
			return nil // present on add, absent on delete: done either way
		}
		return fmt.Errorf("%s: %w", opString(op), nl.IPSetError(uintptr(en)))
	}
	return wrapErr(opString(op), en)
}
