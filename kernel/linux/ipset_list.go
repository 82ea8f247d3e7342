package linux

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// listEntries lists a set's members as the dump streams in (dumpOn), each parsed
// straight into a kernel.SetEntry and handed to each (restart first). vishvananda/netlink's IpsetList keeps every answer,
// then builds a ~200-byte IPSetEntry with a heap value per port and protocol for each
// member: at 30,000 Services the every-tenth listing of 228,004 members was most of an
// 18 s full sync in the emulated VM, and its garbage the collector's work after it
// (`make bench-scale`). The message layout is the kernel's
// (ip_set_core.c ip_set_dump_do): the set's name, type and header in its first answer,
// then IPSET_ATTR_ADT, a nest of IPSET_ATTR_DATA nests, one per member.
func (x *IPSets) listEntries(name string, restart func(), each func(kernel.SetEntry)) error {
	req := nl.NewNetlinkRequest(nl.IPSET_CMD_LIST|(unix.NFNL_SUBSYS_IPSET<<8), 0)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: uint8(unix.AF_NETLINK), Version: nl.NFNETLINK_V0, ResId: 0})
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_PROTOCOL, nl.Uint8Attr(nl.IPSET_PROTOCOL)))
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_SETNAME, nl.ZeroTerminated(name)))
	var typ string
	var bad error
	err := x.list.with(func(_ *netlink.Handle, raw map[int]*nl.SocketHandle) error {
		duringList()
		typ, bad = "", nil
		restart()
		answer, sockErr := dumpOn(raw[unix.NETLINK_NETFILTER], req, func(body []byte) {
			if len(body) < 4 || bad != nil {
				return
			}
			eachAttr(body[4:], func(t uint16, v []byte) { // after the nfgenmsg header
				switch t {
				case nl.IPSET_ATTR_TYPENAME:
					typ = strings.TrimRight(string(v), "\x00")
				case nl.IPSET_ATTR_ADT:
					if typ == "" {
						bad = fmt.Errorf("members before the set's type")
						return
					}
					eachAttr(v, func(t uint16, v []byte) {
						if t == nl.IPSET_ATTR_DATA {
							each(parseMember(typ, v))
						}
					})
				}
			})
		})
		if sockErr != nil {
			return sockErr
		}
		var en syscall.Errno
		if asErrno(answer, &en) && en >= nl.IPSET_ERR_PRIVATE {
			return nl.IPSetError(uintptr(en)) // as vishvananda/netlink reports them
		}
		return answer
	})
	if err == nil {
		err = bad
	}
	return err
}

// parseMember reads one IPSET_ATTR_DATA nest of a set of type typ.
func parseMember(typ string, data []byte) kernel.SetEntry {
	var e kernel.SetEntry
	var ip2 netip.Addr
	var cidr2 int
	eachAttr(data, func(t uint16, v []byte) {
		switch t {
		case nl.IPSET_ATTR_IP:
			e.IP = nestedAddr(v)
		case nl.IPSET_ATTR_IP2:
			ip2 = nestedAddr(v)
		case nl.IPSET_ATTR_CIDR2:
			if len(v) > 0 {
				cidr2 = int(v[0])
			}
		case nl.IPSET_ATTR_PORT:
			if len(v) >= 2 {
				e.Port = binary.BigEndian.Uint16(v)
			}
		case nl.IPSET_ATTR_PROTO:
			if len(v) > 0 {
				e.Protocol = kernel.Protocol(v[0])
			}
		}
	})
	switch typ {
	case string(kernel.BitmapPort):
		e.IP, e.Protocol = netip.Addr{}, 0
	case string(kernel.HashIPPortIP):
		e.IP2 = ip2
	case string(kernel.HashIPPortNet):
		e.Net = netip.PrefixFrom(ip2, cidr2)
	}
	return e
}

// nestedAddr reads an IPSET_ATTR_IP or IP2 nest: one IPSET_ATTR_IPADDR_IPV4 or _IPV6.
func nestedAddr(v []byte) netip.Addr {
	var a netip.Addr
	eachAttr(v, func(_ uint16, v []byte) {
		if b, ok := netip.AddrFromSlice(v); ok {
			a = b.Unmap()
		}
	})
	return a
}
