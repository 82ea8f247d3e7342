package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	gosync "sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The IPVS generic netlink interface (include/uapi/linux/ip_vs.h), for the messages we
// batch ourselves; moby/ipvs keeps its equivalents unexported.
const (
	ipvsGenlVersion = 1
	ipvsCmdNewSvc   = 1
	ipvsCmdSetSvc   = 2
	ipvsCmdDelSvc   = 3
	ipvsCmdNewDest  = 5
	ipvsCmdSetDest  = 6
	ipvsCmdDelDest  = 7

	ipvsCmdAttrService = 1
	ipvsCmdAttrDest    = 2

	ipvsSvcAttrAF       = 1
	ipvsSvcAttrProtocol = 2
	ipvsSvcAttrAddr     = 3
	ipvsSvcAttrPort     = 4

	ipvsDestAttrAddr      = 1
	ipvsDestAttrPort      = 2
	ipvsDestAttrFwdMethod = 3
	ipvsDestAttrWeight    = 4
	ipvsDestAttrUThresh   = 5
	ipvsDestAttrLThresh   = 6

	ipvsConnFMasq = 0 // IP_VS_CONN_F_MASQ: NAT, as kube-proxy programs
)

// batchConn is a generic netlink socket to IPVS and the IPVS family id.
type batchConn struct {
	sh     *nl.SocketHandle
	family uint16
}

// ipvsSocket is one generic netlink socket to IPVS, opened on first use and replaced
// after a socket failure. Its mutex serializes the calls that share it: a socket
// carries one request, batch or dump at a time.
type ipvsSocket struct {
	mu      gosync.Mutex
	timeout time.Duration
	conn    *batchConn
}

// open returns the socket, opening one if there is none. Called with s.mu held.
func (s *ipvsSocket) open() (*batchConn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	fam, err := netlink.GenlFamilyGet("IPVS")
	if err != nil {
		return nil, fmt.Errorf("ipvs generic netlink family: %w", err)
	}
	sock, err := openSocket(unix.NETLINK_GENERIC, s.timeout)
	if err != nil {
		return nil, err
	}
	s.conn = &batchConn{sh: &nl.SocketHandle{Socket: sock}, family: fam.ID}
	return s.conn, nil
}

// drop closes the socket, after a socket failure or on Close, so the next call opens a
// new one. Called with s.mu held.
func (s *ipvsSocket) drop() {
	if s.conn != nil {
		s.conn.sh.Socket.Close()
		s.conn = nil
	}
}

// ipvsBatch is one batch of IPVS requests: n of them, request i named name(i) in
// errors, encoded by msg, its error answer turned into an error by answer (nil: a
// success after all), and its outcome stored at errs[idx(i)].
type ipvsBatch struct {
	n      int
	idx    func(int) int
	name   func(int) string
	msg    func(b []byte, i int, family uint16, seq uint32) []byte
	answer func(i int, en syscall.Errno) error
}

// send sends the batch (sendBatch) over the write socket, which a socket failure
// drops. Called with x.writes.mu held.
func (x *IPVS) send(errs []error, q ipvsBatch) {
	b, err := x.writes.open()
	if err != nil {
		for i := range q.n {
			errs[q.idx(i)] = fmt.Errorf("%s: %w", q.name(i), err)
		}
		return
	}
	out, sockErr := sendBatch(b.sh, q.n, func(buf []byte, i int, seq uint32) []byte { return q.msg(buf, i, b.family, seq) }, q.answer)
	for i, err := range out {
		if err != nil && sockErr != nil && errors.Is(err, sockErr) {
			err = fmt.Errorf("%s: %w", q.name(i), err)
		}
		if err != nil {
			errs[q.idx(i)] = err
		}
	}
	if sockErr != nil {
		x.writes.drop()
	}
}

func same(i int) int { return i }

// WriteVirtualServers implements kernel.IPVS with netlink batches, as WriteRealServers:
// a cold start at 30,000 Services creates 45,000 virtual servers, which moby/ipvs sends
// one request and one answer each (and a goroutine and a timer each in do).
func (x *IPVS) WriteVirtualServers(ops []kernel.VirtualServerOp) []error {
	x.writes.mu.Lock()
	defer x.writes.mu.Unlock()
	errs := make([]error, len(ops))
	name := func(i int) string { return ops[i].Name() + " " + ops[i].VS.VSKey.String() }
	x.send(errs, ipvsBatch{n: len(ops), idx: same, name: name,
		msg: func(b []byte, i int, family uint16, seq uint32) []byte {
			return ipvsServiceMessage(b, family, ops[i], seq)
		},
		answer: func(i int, en syscall.Errno) error {
			if (en == syscall.ESRCH || en == syscall.ENOENT) && ops[i].Kind == kernel.OpDelete {
				return nil // already gone (the kernel answers ESRCH: no such service)
			}
			return writeErr(name(i), en)
		}})
	return errs
}

// WriteRealServers implements kernel.IPVS with netlink batches (sendBatch): a cold start
// of 10,000 Services adds 60,000 real servers, and a round trip each was the largest
// part of it in the VM. Adds the kernel refuses as existing are sent again as updates.
func (x *IPVS) WriteRealServers(ops []kernel.RealServerOp) []error {
	x.writes.mu.Lock()
	defer x.writes.mu.Unlock()
	errs := make([]error, len(ops))
	var existing []int
	send := func(ops []kernel.RealServerOp, idx func(int) int) {
		x.send(errs, ipvsBatch{n: len(ops), idx: idx, name: func(i int) string { return rsOpString(ops[i]) },
			msg: func(b []byte, i int, family uint16, seq uint32) []byte {
				return ipvsDestMessage(b, family, ops[i], seq)
			},
			answer: func(i int, en syscall.Errno) error {
				switch {
				case en == syscall.EEXIST && ops[i].Kind == kernel.OpAdd:
					existing = append(existing, idx(i))
					return nil
				case en == syscall.ENOENT && ops[i].Kind == kernel.OpDelete:
					return nil // already gone
				}
				return writeErr(rsOpString(ops[i]), en)
			}})
	}
	send(ops, same)
	if len(existing) > 0 && x.writes.conn != nil {
		again := make([]kernel.RealServerOp, len(existing))
		for j, i := range existing {
			again[j] = ops[i]
			again[j].Kind = kernel.OpUpdate
		}
		idx := existing
		existing = nil
		send(again, func(j int) int { return idx[j] })
	}
	return errs
}

func rsOpString(op kernel.RealServerOp) string {
	return fmt.Sprintf("%s %s to %s", op.Name(), op.RS.AddrPort(), op.VS)
}

// ipvsServiceMessage encodes one virtual-server op as IPVS_CMD_NEW/SET/DEL_SERVICE with
// the attributes moby/ipvs sends (fillService in its netlink_linux.go): the key (family,
// protocol, address, port) and, for a new or changed one, its settings (appendSettings).
// A delete carries the key only: the kernel reads the rest only for NEW and SET
// (ip_vs_genl_parse_service, need_full_svc).
func ipvsServiceMessage(b []byte, family uint16, op kernel.VirtualServerOp, seq uint32) []byte {
	m := ipvsRequest(b, family, seq, [3]uint8{ipvsCmdNewSvc, ipvsCmdSetSvc, ipvsCmdDelSvc}, op.Kind == kernel.OpUpdate, op.Kind == kernel.OpDelete)
	vs := op.VS
	svc := m.nest(ipvsCmdAttrService)
	appendServiceKey(&m, vs.VSKey)
	if op.Kind != kernel.OpDelete {
		appendSettings(&m, vs.VSSettings, vs.Address.Unmap().Is6())
	}
	m.end(svc)
	return m.done()
}

// ipvsRequest starts an IPVS generic netlink request: cmds are the NEW, SET and DEL
// commands of one object kind, and set or del picks the second or third.
func ipvsRequest(b []byte, family uint16, seq uint32, cmds [3]uint8, set, del bool) nlMsg {
	m := beginMsg(b, family, unix.NLM_F_REQUEST, seq)
	m.header(ipvsCmd(cmds, set, del), ipvsGenlVersion, 0)
	return m
}

// ipvsCmd picks the NEW (cmds[0]), SET (set) or DEL (del) command.
func ipvsCmd(cmds [3]uint8, set, del bool) uint8 {
	switch {
	case set:
		return cmds[1]
	case del:
		return cmds[2]
	}
	return cmds[0]
}

// appendServiceKey appends the attributes naming a virtual server inside an
// IPVS_CMD_ATTR_SERVICE: its family, protocol, address and port (network order).
func appendServiceKey(m *nlMsg, k kernel.VSKey) {
	af := uint16(unix.AF_INET)
	if k.Address.Unmap().Is6() {
		af = unix.AF_INET6
	}
	m.u16(ipvsSvcAttrAF, af)
	m.u16(ipvsSvcAttrProtocol, uint16(k.Protocol))
	m.addr(ipvsSvcAttrAddr, k.Address)
	m.be16(ipvsSvcAttrPort, k.Port)
}

// serviceKeyAttr is the IPVS_CMD_ATTR_SERVICE attribute naming a virtual server, for
// the reads (appendServiceKey's attributes).
func serviceKeyAttr(k kernel.VSKey) *nl.RtAttr {
	af := uint16(unix.AF_INET)
	if k.Address.Unmap().Is6() {
		af = unix.AF_INET6
	}
	svc := nl.NewRtAttr(ipvsCmdAttrService, nil)
	svc.AddRtAttr(ipvsSvcAttrAF, nl.Uint16Attr(af))
	svc.AddRtAttr(ipvsSvcAttrProtocol, nl.Uint16Attr(uint16(k.Protocol)))
	svc.AddRtAttr(ipvsSvcAttrAddr, k.Address.Unmap().AsSlice())
	svc.AddRtAttr(ipvsSvcAttrPort, binary.BigEndian.AppendUint16(nil, k.Port))
	return svc
}

// ipvsDestMessage encodes one real-server op as IPVS_CMD_NEW/SET/DEL_DEST: the virtual
// server by family, protocol, address and port, the destination with NAT forwarding,
// its weight and no thresholds (what moby/ipvs sends for our destinations).
func ipvsDestMessage(b []byte, family uint16, op kernel.RealServerOp, seq uint32) []byte {
	m := ipvsRequest(b, family, seq, [3]uint8{ipvsCmdNewDest, ipvsCmdSetDest, ipvsCmdDelDest}, op.Kind == kernel.OpUpdate, op.Kind == kernel.OpDelete)
	svc := m.nest(ipvsCmdAttrService)
	appendServiceKey(&m, op.VS)
	m.end(svc)
	dest := m.nest(ipvsCmdAttrDest)
	m.addr(ipvsDestAttrAddr, op.RS.Address)
	m.be16(ipvsDestAttrPort, op.RS.Port)
	m.u32(ipvsDestAttrFwdMethod, ipvsConnFMasq)
	m.u32(ipvsDestAttrWeight, uint32(op.RS.Weight))
	m.u32(ipvsDestAttrUThresh, 0)
	m.u32(ipvsDestAttrLThresh, 0)
	m.end(dest)
	return m.done()
}
