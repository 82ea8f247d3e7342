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

// ipsetBatchBytes bounds one sendmsg of set writes (~80 messages). The kernel handles
// every message of a sendmsg before the call returns and answers only failures and the
// last message; a failure echoes its request (~1 KiB of receive buffer each), so a
// chunk stays far below the 208 KiB default receive buffer even when all of it fails.
const ipsetBatchBytes = 8 << 10

// WriteEntries implements kernel.IPSets. The writes travel as streams of
// IPSET_CMD_ADD/DEL messages, one sendmsg per ipsetBatchBytes, where kube-proxy execs
// `ipset` once per entry and the library's calls cost a round trip each: a cold start of
// 10,000 Services writes 66,000 entries. Without NLM_F_EXCL the kernel itself treats
// adding a present entry or deleting an absent one as success (ip_set_core.c,
// IPSET_FLAG_EXIST), as `ipset -exist` does.
func (IPSets) WriteEntries(ops []kernel.SetOp) []error {
	errs := make([]error, len(ops))
	for start := 0; start < len(ops); {
		end, err := writeChunk(ops, start, errs)
		if err != nil {
			// The socket failed: what this chunk did is unknown, and nothing after it
			// was sent. Every op not answered is reported failed, to be retried.
			for i := start; i < len(ops); i++ {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("%s: %w", opString(ops[i]), err)
				}
			}
			break
		}
		start = end
	}
	return errs
}

// writeChunk sends ops[start:end] (as many as fit in ipsetBatchBytes) in one sendmsg,
// acknowledging only the last, and records each failure in errs.
func writeChunk(ops []kernel.SetOp, start int, errs []error) (end int, err error) {
	err = withIpset(func(_ *netlink.Handle, raw map[int]*nl.SocketHandle) error {
		sh := raw[unix.NETLINK_NETFILTER]
		var buf []byte
		var first, last uint32
		lastOff := 0
		for end = start; end < len(ops) && len(buf) < ipsetBatchBytes; end++ {
			sh.Seq++
			if end == start {
				first = sh.Seq
			}
			last, lastOff = sh.Seq, len(buf)
			buf = append(buf, ipsetOpMessage(ops[end], sh.Seq)...)
		}
		// Only the last message asks for an acknowledgement: its answer (after every
		// earlier one, the kernel handles them in order) ends the chunk.
		flags := buf[lastOff+6 : lastOff+8] // nlmsghdr: len u32, type u16, flags u16
		nl.NativeEndian().PutUint16(flags, nl.NativeEndian().Uint16(flags)|unix.NLM_F_ACK)
		if err := sendAll(sh.Socket.GetFd(), buf); err != nil {
			return err
		}
		for {
			msgs, _, err := sh.Socket.Receive()
			if err != nil {
				return err
			}
			for _, m := range msgs {
				seq := m.Header.Seq
				if m.Header.Type != unix.NLMSG_ERROR || seq < first || seq > last || len(m.Data) < 4 {
					continue // not ours (a stale answer of an earlier request)
				}
				i := start + int(seq-first)
				if code := -int32(nl.NativeEndian().Uint32(m.Data[0:4])); code != 0 {
					errs[i] = opError(ops[i], syscall.Errno(code))
				}
				if seq == last {
					return nil
				}
			}
		}
	})
	return end, err
}

func sendAll(fd int, buf []byte) error {
	for {
		err := unix.Sendto(fd, buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err != unix.EAGAIN && err != unix.EINTR {
			return err
		}
	}
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
