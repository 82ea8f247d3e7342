package linux

import (
	"encoding/binary"
	"fmt"
	gosync "sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Netlink dumps read as they stream in, for IPVS (ipvs_dump.go) and addresses.

const (
	// dumpBuffer is one receive of a dump. The kernel fills a dump's answer up to the
	// largest buffer a recvmsg offered, capped at 32 KiB (netlink_recvmsg,
	// max_recvmsg_len), and IPVS restarts its walk of the service table from the first
	// entry for every answer (ip_vs_genl_dump_services skips cb->args[0] entries), so
	// a small buffer makes a large dump quadratic.
	dumpBuffer = 64 << 10
)

// dumpBuffers keeps the receive buffers of dumps: a periodic full sync dumps the real
// servers of thousands of virtual servers one at a time, and a new 64 KiB each was
// hundreds of megabytes of garbage per sync at 30,000 Services.
var dumpBuffers = gosync.Pool{New: func() any { b := make([]byte, dumpBuffer); return &b }}

// dumpOn sends req as a dump request over sh (its flags and sequence number are set
// here) and calls each with the body of every answer as it arrives: a dump is never
// held whole, and nothing is allocated per entry here. answer is the kernel's error
// answer or netlink.ErrDumpInterrupted; sockErr a failure of the socket, after which
// the socket must be replaced (the rest of the dump would arrive as the next request's
// answers). A dump that makes progress never times out: the socket's receive timeout
// (openSocket) ends one that stalls.
func dumpOn(sh *nl.SocketHandle, req *nl.NetlinkRequest, each func(body []byte)) (answer, sockErr error) {
	sh.Seq++
	req.Seq = sh.Seq
	req.Flags |= unix.NLM_F_REQUEST | unix.NLM_F_DUMP
	fd := sh.Socket.GetFd()
	if err := unix.Sendto(fd, req.Serialize(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	return readDump(func(buf []byte) (int, error) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		return n, err
	}, req.Seq, each)
}

// readDump reads the answers to the dump request seq with recv (one datagram of
// netlink messages a call) until NLMSG_DONE or an error answer; see dumpOn.
func readDump(recv func([]byte) (int, error), seq uint32, each func([]byte)) (answer, sockErr error) {
	bp := dumpBuffers.Get().(*[]byte)
	defer dumpBuffers.Put(bp)
	buf := *bp
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
				// A dump that failed part-way ends with its errno in NLMSG_DONE's payload
				// (net/netlink/af_netlink.c, netlink_dump: dump_done_errno), not in an
				// error answer.
				if len(body) >= 4 {
					if code := -int32(h.Uint32(body[0:4])); code > 0 {
						return syscall.Errno(code), nil
					}
				}
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
			each(body)
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

// be16 reads a network-order (port) attribute value; a short one reads as 0.
func be16(v []byte) uint16 {
	if len(v) < 2 {
		return 0
	}
	return binary.BigEndian.Uint16(v)
}

// u64or32 reads a counter that is 64 bits in IPVS_SVC_ATTR_STATS64 and, for the
// counts, 32 bits in the older IPVS_SVC_ATTR_STATS.
func u64or32(v []byte) uint64 {
	if len(v) >= 8 {
		return nl.NativeEndian().Uint64(v)
	}
	return uint64(u32(v))
}
