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

	// dumpBuffer is one receive of a dump. The kernel fills a dump's answer up to the
	// largest buffer a recvmsg offered, capped at 32 KiB (netlink_recvmsg,
	// max_recvmsg_len), and IPVS restarts its walk of the service table from the first
	// entry for every answer (ip_vs_genl_dump_services skips cb->args[0] entries), so
	// a small buffer makes a large dump quadratic.
	dumpBuffer = 64 << 10
)

// dump sends the IPVS dump request cmd (with attrs, if any) over the batch socket and
// calls each with the attributes of every answer (past the generic netlink header), as
// they arrive: the dump is never held whole, and nothing is allocated per entry here. A
// dump that makes progress never times out; the socket's receive timeout ends one that
// stalls. Called with x.mu held.
func (x *IPVS) dump(op string, cmd uint8, attrs []*nl.RtAttr, each func(attrs []byte)) error {
	b, err := x.batchSocket()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	answer, sockErr := dumpOver(b, cmd, attrs, each)
	if sockErr != nil {
		b.sh.Socket.Close() // the rest of this dump would arrive as the next one's answers
		x.batch = nil
		return wrapErr(op, sockErr)
	}
	return wrapErr(op, answer)
}

// dumpOver runs one dump over b: answer is the kernel's error answer or
// netlink.ErrDumpInterrupted, sockErr a failure of the socket (a timeout included).
func dumpOver(b *batchConn, cmd uint8, attrs []*nl.RtAttr, each func([]byte)) (answer, sockErr error) {
	b.sh.Seq++
	seq := b.sh.Seq
	req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: b.family, Flags: unix.NLM_F_REQUEST | unix.NLM_F_DUMP, Seq: seq}}
	req.AddData(&nl.Genlmsg{Command: cmd, Version: ipvsGenlVersion})
	for _, a := range attrs {
		req.AddData(a)
	}
	fd := b.sh.Socket.GetFd()
	if err := unix.Sendto(fd, req.Serialize(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	return readDump(func(buf []byte) (int, error) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		return n, err
	}, seq, each)
}

// readDump reads the answers to the dump request seq with recv (one datagram of
// netlink messages a call) until NLMSG_DONE or an error answer; see dumpOver.
func readDump(recv func([]byte) (int, error), seq uint32, each func([]byte)) (answer, sockErr error) {
	buf := make([]byte, dumpBuffer)
	interrupted := false
	for {
		n, err := recv(buf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return nil, ErrTimeout
		}
		if err != nil {
			return nil, err
		}
		for msg := buf[:n]; len(msg) >= unix.SizeofNlMsghdr; {
			h := nl.NativeEndian()
			size, typ, flags, mseq := int(h.Uint32(msg[0:4])), h.Uint16(msg[4:6]), h.Uint16(msg[6:8]), h.Uint32(msg[8:12])
			if size < unix.SizeofNlMsghdr || size > len(msg) {
				return nil, fmt.Errorf("malformed netlink message of %d bytes", size)
			}
			body := msg[unix.SizeofNlMsghdr:size]
			msg = msg[min(nlAlign(size), len(msg)):]
			if mseq != seq {
				continue // a stale answer to an earlier request
			}
			interrupted = interrupted || flags&unix.NLM_F_DUMP_INTR != 0
			switch typ {
			case unix.NLMSG_DONE:
				if interrupted {
					return netlink.ErrDumpInterrupted, nil
				}
				return nil, nil
			case unix.NLMSG_ERROR:
				if len(body) >= 4 {
					if code := -int32(h.Uint32(body[0:4])); code != 0 {
						return syscall.Errno(code), nil
					}
				}
				return nil, nil
			}
			if len(body) >= 4 {
				each(body[4:]) // the generic netlink header: cmd, version, reserved
			}
		}
	}
}

func nlAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// eachAttr calls fn with the type (without the nested and byte-order bits) and value of
// every netlink attribute in b.
func eachAttr(b []byte, fn func(typ uint16, v []byte)) {
	for len(b) >= unix.SizeofRtAttr {
		l := int(nl.NativeEndian().Uint16(b[0:2]))
		if l < unix.SizeofRtAttr || l > len(b) {
			return
		}
		fn(nl.NativeEndian().Uint16(b[2:4])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER), b[unix.SizeofRtAttr:l])
		b = b[min(nlaAlign(l), len(b)):]
	}
}

func nlaAlign(n int) int { return (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }

// nested returns the value of the attribute typ in b, or nil.
func nested(b []byte, typ uint16) []byte {
	var out []byte
	eachAttr(b, func(t uint16, v []byte) {
		if t == typ {
			out = v
		}
	})
	return out
}

// u32 and u16 read a host-order attribute value; a short one reads as 0.
func u32(v []byte) uint32 {
	if len(v) < 4 {
		return 0
	}
	return nl.NativeEndian().Uint32(v)
}

func u16(v []byte) uint16 {
	if len(v) < 2 {
		return 0
	}
	return nl.NativeEndian().Uint16(v)
}

// u64or32 reads a counter that is 64 bits in IPVS_SVC_ATTR_STATS64 and, for the
// counts, 32 bits in the older IPVS_SVC_ATTR_STATS.
func u64or32(v []byte) uint64 {
	if len(v) >= 8 {
		return nl.NativeEndian().Uint64(v)
	}
	return uint64(u32(v))
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
		switch t {
		case ipvsSvcAttrAF:
			af = u16(v)
		case ipvsSvcAttrProtocol:
			vs.Protocol = kernel.Protocol(u16(v))
		case ipvsSvcAttrAddr:
			addr = v
		case ipvsSvcAttrPort:
			if len(v) >= 2 {
				vs.Port = binary.BigEndian.Uint16(v)
			}
		case ipvsSvcAttrFWMark:
			fwmark = u32(v)
		case ipvsSvcAttrSched:
			vs.Scheduler = schedulerName(v)
		case ipvsSvcAttrFlags:
			vs.Flags = u32(v) // struct ip_vs_flags: the flags, then the mask
		case ipvsSvcAttrTimeout:
			vs.Timeout = u32(v)
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
			if len(v) >= 2 {
				rs.Port = binary.BigEndian.Uint16(v)
			}
		case ipvsDestAttrWeight:
			rs.Weight = int(int32(u32(v)))
		case ipvsDestAttrActiveConns:
			rs.ActiveConns = int(u32(v))
		case ipvsDestAttrInactConns:
			rs.InactiveConns = int(u32(v))
		case ipvsDestAttrAF:
			af = u16(v)
		}
	})
	a, ok := addrOf(af, addr)
	rs.Address = a
	return rs, ok
}

// schedulerName is the scheduler of an IPVS_SVC_ATTR_SCHED_NAME value (NUL-terminated),
// without allocating for the kernel's own schedulers: a dump has one per virtual server.
func schedulerName(v []byte) string {
	for i, c := range v {
		if c == 0 {
			v = v[:i]
			break
		}
	}
	for _, s := range kernel.InTreeSchedulers {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}
