package linux

import (
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// lookupChunk is how many IPVS_CMD_GET_SERVICE requests go in one sendmsg. The kernel
// answers each in an skb of its own (ip_vs_genl_get_cmd: nlmsg_new(NLMSG_DEFAULT_SIZE),
// ~4.5 KiB of receive buffer each) and drops an answer that finds the receive buffer
// full (208 KiB by default, net.core.rmem_default), so a chunk stays well below it.
const lookupChunk = 24

// LookupVirtualServers implements kernel.IPVS: one IPVS_CMD_GET_SERVICE per key, a hash
// lookup in the kernel, lookupChunk of them per sendmsg. A dump of every virtual server
// costs the kernel O(N²) (dump.go), seconds at 45,000 in the VM; these cost O(keys).
// A key the kernel has no virtual server for (ESRCH) gives a zero DumpedVS.
func (x *IPVS) LookupVirtualServers(keys []kernel.VSKey) ([]kernel.DumpedVS, error) {
	x.reads.mu.Lock()
	defer x.reads.mu.Unlock()
	out := make([]kernel.DumpedVS, len(keys))
	b, err := x.reads.open()
	if err != nil {
		return nil, fmt.Errorf("look up virtual servers: %w", err)
	}
	for start := 0; start < len(keys); start += lookupChunk {
		end := min(start+lookupChunk, len(keys))
		answer, sockErr := lookupChunkOn(b, keys[start:end], out[start:end])
		if sockErr != nil {
			x.reads.drop() // its answers would arrive as the next request's
			return nil, wrapErr("look up virtual servers", sockErr)
		}
		if answer != nil {
			return nil, wrapErr("look up virtual servers", answer)
		}
	}
	return out, nil
}

// lookupChunkOn sends one GET_SERVICE per key over b in one sendmsg, the last with
// NLM_F_ACK, and reads the answers into out until the last one's. A key that is not
// found leaves its entry zero; any other error answer is answer.
func lookupChunkOn(b *batchConn, keys []kernel.VSKey, out []kernel.DumpedVS) (answer, sockErr error) {
	sh := b.sh
	var buf []byte
	first := sh.Seq + 1
	for i, k := range keys {
		sh.Seq++
		req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: b.family, Flags: unix.NLM_F_REQUEST, Seq: sh.Seq}}
		if i == len(keys)-1 {
			req.Flags |= unix.NLM_F_ACK
		}
		req.AddData(&nl.Genlmsg{Command: ipvsCmdGetSvc, Version: ipvsGenlVersion})
		req.AddData(serviceKeyAttr(k))
		buf = append(buf, req.Serialize()...)
	}
	last := sh.Seq
	fd := sh.Socket.GetFd()
	for {
		err := unix.Sendto(fd, buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err == nil {
			break
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			return nil, err
		}
	}
	bp := dumpBuffers.Get().(*[]byte)
	defer dumpBuffers.Put(bp)
	rbuf := *bp
	for {
		n, _, err := unix.Recvfrom(fd, rbuf, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return nil, ErrTimeout
		case err != nil:
			return nil, err
		}
		h := nl.NativeEndian()
		for msg := rbuf[:n]; len(msg) >= unix.SizeofNlMsghdr; {
			size, typ, seq := int(h.Uint32(msg[0:4])), h.Uint16(msg[4:6]), h.Uint32(msg[8:12])
			if size < unix.SizeofNlMsghdr || size > len(msg) {
				return nil, fmt.Errorf("malformed netlink message of %d bytes", size)
			}
			body := msg[unix.SizeofNlMsghdr:size]
			msg = msg[min(nlAlign(size), len(msg)):]
			if seq < first || seq > last {
				continue // a stale answer to an earlier request
			}
			i := int(seq - first)
			if typ == unix.NLMSG_ERROR {
				code := int32(0)
				if len(body) >= 4 {
					code = -int32(h.Uint32(body[0:4]))
				}
				if code != 0 && code != int32(unix.ESRCH) && answer == nil {
					answer = fmt.Errorf("%s: %w", keys[i], syscall.Errno(code))
				}
				if seq == last {
					return answer, nil
				}
				continue
			}
			if len(body) >= 4 {
				if vs, st, ok := parseService(body[4:]); ok {
					out[i] = kernel.DumpedVS{VirtualServer: vs, Stats: st}
				}
			}
		}
	}
}
