package linux

import (
	"fmt"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// WriteEntries implements kernel.Sets. The writes travel as netlink batches
// (sendBatch), where kube-proxy execs `ipset` once per entry and the library's calls cost
// a round trip each: a cold start of 10,000 Services writes 66,000 entries. Without
// NLM_F_EXCL the kernel itself treats adding a present entry or deleting an absent one
// as success (ip_set_core.c, IPSET_FLAG_EXIST), as `ipset -exist` does.
func (x *IPSets) WriteEntries(ops []kernel.SetOp) []error {
	var errs []error
	err := x.conn.with(func(_ *netlink.Handle, raw map[int]*nl.SocketHandle) error {
		var sockErr error
		errs, sockErr = sendBatch(raw[unix.NETLINK_NETFILTER], len(ops),
			func(b []byte, i int, seq uint32) []byte { return ipsetOpMessage(b, ops[i], seq) },
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
func ipsetOpMessage(b []byte, op kernel.SetOp, seq uint32) []byte {
	cmd := nl.IPSET_CMD_ADD
	if op.Delete {
		cmd = nl.IPSET_CMD_DEL
	}
	m := beginMsg(b, uint16(cmd|unix.NFNL_SUBSYS_IPSET<<8), unix.NLM_F_REQUEST, seq)
	m.header(uint8(unix.AF_NETLINK), nl.NFNETLINK_V0, 0)
	m.u8(nl.IPSET_ATTR_PROTOCOL, nl.IPSET_PROTOCOL)
	m.str(nl.IPSET_ATTR_SETNAME, op.Set)
	data := m.nest(nl.IPSET_ATTR_DATA | nl.NLA_F_NESTED)
	e := op.Entry
	if !e.IP.IsValid() {
		m.be16(nl.IPSET_ATTR_PORT|nl.NLA_F_NET_BYTEORDER, e.Port)
	} else {
		appendIPAttr(&m, nl.IPSET_ATTR_IP, e.IP)
		if e.Protocol != 0 {
			m.u8(nl.IPSET_ATTR_PROTO, uint8(e.Protocol))
			m.be16(nl.IPSET_ATTR_PORT|nl.NLA_F_NET_BYTEORDER, e.Port)
		}
		switch {
		case e.IP2.IsValid():
			appendIPAttr(&m, nl.IPSET_ATTR_IP2, e.IP2)
		case e.Net.IsValid():
			appendIPAttr(&m, nl.IPSET_ATTR_IP2, e.Net.Addr())
			m.u8(nl.IPSET_ATTR_CIDR2, uint8(e.Net.Bits()))
		}
	}
	m.end(data)
	return m.done()
}

// appendIPAttr appends a nested address attribute (IPSET_ATTR_IP or IP2) holding a in
// network byte order.
func appendIPAttr(m *nlMsg, typ uint16, a netip.Addr) {
	at := m.nest(typ | nl.NLA_F_NESTED)
	if a = a.Unmap(); a.Is4() {
		m.addr(nl.IPSET_ATTR_IPADDR_IPV4|nl.NLA_F_NET_BYTEORDER, a)
	} else {
		m.addr(nl.IPSET_ATTR_IPADDR_IPV6|nl.NLA_F_NET_BYTEORDER, a)
	}
	m.end(at)
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
		err := fmt.Errorf("%s: %w", opString(op), nl.IPSetError(uintptr(en)))
		if refusedErrno(en) {
			return fmt.Errorf("%w: %w", kernel.ErrRefused, err)
		}
		return err
	}
	return writeErr(opString(op), en)
}
