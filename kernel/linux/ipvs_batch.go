package linux

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The IPVS generic netlink interface (include/uapi/linux/ip_vs.h), for the messages we
// batch ourselves; moby/ipvs keeps its equivalents unexported.
const (
	ipvsGenlVersion = 1
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

// batchConn is the generic netlink socket for batched IPVS writes and the IPVS family
// id; opened on first use, dropped on a socket failure. Guarded by IPVS.mu.
type batchConn struct {
	sh     *nl.SocketHandle
	family uint16
}

func (x *IPVS) batchSocket() (*batchConn, error) {
	if x.batch != nil {
		return x.batch, nil
	}
	fam, err := netlink.GenlFamilyGet("IPVS")
	if err != nil {
		return nil, fmt.Errorf("ipvs generic netlink family: %w", err)
	}
	sock, err := openSocket(unix.NETLINK_GENERIC, x.timeout)
	if err != nil {
		return nil, err
	}
	x.batch = &batchConn{sh: &nl.SocketHandle{Socket: sock}, family: fam.ID}
	return x.batch, nil
}

// WriteRealServers implements kernel.IPVS with netlink batches (sendBatch): a cold start
// of 10,000 Services adds 60,000 real servers, and a round trip each was the largest
// part of it in the VM. Adds the kernel refuses as existing are sent again as updates.
func (x *IPVS) WriteRealServers(ops []kernel.RealServerOp) []error {
	x.mu.Lock()
	defer x.mu.Unlock()
	errs := make([]error, len(ops))
	b, err := x.batchSocket()
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("%s: %w", rsOpString(ops[i]), err)
		}
		return errs
	}
	var existing []int
	send := func(ops []kernel.RealServerOp, idx func(int) int) {
		out, sockErr := sendBatch(b.sh, len(ops), func(i int, seq uint32) []byte { return ipvsDestMessage(b.family, ops[i], seq) },
			func(i int, en syscall.Errno) error {
				switch {
				case en == syscall.EEXIST && ops[i].Kind == kernel.AddRS:
					existing = append(existing, idx(i))
					return nil
				case en == syscall.ENOENT && ops[i].Kind == kernel.DeleteRS:
					return nil // already gone
				}
				return wrapErr(rsOpString(ops[i]), en)
			})
		for i, err := range out {
			if err != nil {
				errs[idx(i)] = err
			}
		}
		if sockErr != nil {
			b.sh.Socket.Close()
			x.batch = nil
		}
	}
	send(ops, func(i int) int { return i })
	if len(existing) > 0 && x.batch != nil {
		again := make([]kernel.RealServerOp, len(existing))
		for j, i := range existing {
			again[j] = ops[i]
			again[j].Kind = kernel.UpdateRS
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

// ipvsDestMessage encodes one real-server op as IPVS_CMD_NEW/SET/DEL_DEST: the virtual
// server by family, protocol, address and port, the destination with NAT forwarding,
// its weight and no thresholds (what moby/ipvs sends for our destinations).
func ipvsDestMessage(family uint16, op kernel.RealServerOp, seq uint32) []byte {
	cmd := uint8(ipvsCmdNewDest)
	switch op.Kind {
	case kernel.UpdateRS:
		cmd = ipvsCmdSetDest
	case kernel.DeleteRS:
		cmd = ipvsCmdDelDest
	}
	req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: family, Flags: unix.NLM_F_REQUEST, Seq: seq}}
	req.AddData(&nl.Genlmsg{Command: cmd, Version: ipvsGenlVersion})
	port := func(p uint16) []byte { return binary.BigEndian.AppendUint16(nil, p) }
	af := uint16(unix.AF_INET)
	if op.VS.Address.Unmap().Is6() {
		af = unix.AF_INET6
	}
	svc := nl.NewRtAttr(ipvsCmdAttrService, nil)
	svc.AddRtAttr(ipvsSvcAttrAF, nl.Uint16Attr(af))
	svc.AddRtAttr(ipvsSvcAttrProtocol, nl.Uint16Attr(uint16(op.VS.Protocol)))
	svc.AddRtAttr(ipvsSvcAttrAddr, op.VS.Address.Unmap().AsSlice())
	svc.AddRtAttr(ipvsSvcAttrPort, port(op.VS.Port))
	req.AddData(svc)
	dest := nl.NewRtAttr(ipvsCmdAttrDest, nil)
	dest.AddRtAttr(ipvsDestAttrAddr, op.RS.Address.Unmap().AsSlice())
	dest.AddRtAttr(ipvsDestAttrPort, port(op.RS.Port))
	dest.AddRtAttr(ipvsDestAttrFwdMethod, nl.Uint32Attr(ipvsConnFMasq))
	dest.AddRtAttr(ipvsDestAttrWeight, nl.Uint32Attr(uint32(op.RS.Weight)))
	dest.AddRtAttr(ipvsDestAttrUThresh, nl.Uint32Attr(0))
	dest.AddRtAttr(ipvsDestAttrLThresh, nl.Uint32Attr(0))
	req.AddData(dest)
	return req.Serialize()
}
