package linux

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The IPVS dump commands and the attributes a dump answers with (include/uapi/linux/ip_vs.h).
const (
	ipvsCmdGetSvc  = 4
	ipvsCmdGetDest = 8

	ipvsSvcAttrFWMark  = 5
	ipvsSvcAttrStats   = 10
	ipvsSvcAttrStats64 = 12

	ipvsDestAttrActiveConns = 7
	ipvsDestAttrInactConns  = 8
	ipvsDestAttrAF          = 11

	ipvsStatsAttrConns    = 1
	ipvsStatsAttrInPkts   = 2
	ipvsStatsAttrOutPkts  = 3
	ipvsStatsAttrInBytes  = 4
	ipvsStatsAttrOutBytes = 5
)

// dump sends the IPVS dump request cmd (with attrs, if any) over sock and
// calls each with the attributes of every answer (past the generic netlink header), as
// they arrive: the dump is never held whole, and nothing is allocated per entry here. A
// dump that makes progress never times out; the socket's receive timeout ends one that
// stalls. Called with sock.mu held.
func (x *IPVS) dump(sock *ipvsSocket, op string, cmd uint8, attrs []*nl.RtAttr, each func(attrs []byte)) error {
	b, err := sock.open()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: b.family}}
	req.AddData(&nl.Genlmsg{Command: cmd, Version: ipvsGenlVersion})
	for _, a := range attrs {
		req.AddData(a)
	}
	answer, sockErr := dumpOn(b.sh, req, func(body []byte) {
		if len(body) >= 4 {
			each(body[4:]) // past the generic netlink header: cmd, version, reserved
		}
	})
	if sockErr != nil {
		sock.drop() // the rest of this dump would arrive as the next one's answers
		return wrapErr(op, sockErr)
	}
	return wrapErr(op, answer)
}

// addrOf is the address of an IPVS address attribute (a 16-byte union nf_inet_addr)
// of family af.
func addrOf(af uint16, v []byte) (netip.Addr, bool) {
	switch {
	case af == unix.AF_INET && len(v) >= 4:
		return netip.AddrFrom4([4]byte(v[:4])), true
	case af == unix.AF_INET6 && len(v) >= 16:
		return netip.AddrFrom16([16]byte(v[:16])), true
	}
	return netip.Addr{}, false
}

// parseService reads one service of a dump (the attributes of an IPVS_CMD_NEW_SERVICE
// answer) into a virtual server and its counters; ok is false for fwmark services and
// for what cannot be read.
func parseService(attrs []byte) (vs kernel.VirtualServer, st kernel.VSStats, ok bool) {
	var af uint16
	var addr []byte
	var fwmark uint32
	var stats, stats64 []byte
	eachAttr(nested(attrs, ipvsCmdAttrService), func(t uint16, v []byte) {
		if readSetting(t, v, &vs.VSSettings) {
			return
		}
		switch t {
		case ipvsSvcAttrAF:
			af = u16(v)
		case ipvsSvcAttrProtocol:
			vs.Protocol = kernel.Protocol(u16(v))
		case ipvsSvcAttrAddr:
			addr = v
		case ipvsSvcAttrPort:
			vs.Port = be16(v)
		case ipvsSvcAttrFWMark:
			fwmark = u32(v)
		case ipvsSvcAttrStats:
			stats = v
		case ipvsSvcAttrStats64:
			stats64 = v
		}
	})
	a, ok := addrOf(af, addr)
	if !ok || fwmark != 0 {
		return kernel.VirtualServer{}, kernel.VSStats{}, false
	}
	vs.Address = a
	if stats64 != nil {
		stats = stats64
	}
	eachAttr(stats, func(t uint16, v []byte) {
		switch t {
		case ipvsStatsAttrConns:
			st.Connections = u64or32(v)
		case ipvsStatsAttrInPkts:
			st.PacketsIn = u64or32(v)
		case ipvsStatsAttrOutPkts:
			st.PacketsOut = u64or32(v)
		case ipvsStatsAttrInBytes:
			st.BytesIn = u64or32(v)
		case ipvsStatsAttrOutBytes:
			st.BytesOut = u64or32(v)
		}
	})
	return vs, st, true
}

// parseDest reads one real server of a dump (the attributes of an IPVS_CMD_NEW_DEST
// answer); svcAF is its virtual server's family, which kernels before 3.18 do not
// repeat in IPVS_DEST_ATTR_ADDR_FAMILY.
func parseDest(attrs []byte, svcAF uint16) (kernel.RealServer, bool) {
	var rs kernel.RealServer
	af := svcAF
	var addr []byte
	eachAttr(nested(attrs, ipvsCmdAttrDest), func(t uint16, v []byte) {
		switch t {
		case ipvsDestAttrAddr:
			addr = v
		case ipvsDestAttrPort:
			rs.Port = be16(v)
		case ipvsDestAttrWeight:
			rs.Weight = int32(u32(v))
		case ipvsDestAttrActiveConns:
			rs.ActiveConns = int32(u32(v)) // the kernel's atomic_t
		case ipvsDestAttrInactConns:
			rs.InactiveConns = int32(u32(v))
		case ipvsDestAttrAF:
			af = u16(v)
		}
	})
	a, ok := addrOf(af, addr)
	rs.Address = a
	return rs, ok
}
