package linux

import (
	gosync "sync"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// routeConn is one of an Addresses' rtnetlink sockets (for batched address writes, or
// for the address dump), opened on first use and dropped on a socket failure.
type routeConn struct {
	mu gosync.Mutex
	sh *nl.SocketHandle
	// strict is set when the socket has NETLINK_GET_STRICT_CHK: the kernel then honours
	// a dump request's interface index (Linux 4.20, "netlink: Add new socket option to
	// enable strict checking on dumps" and the address-dump filters after it), where
	// without it every interface's addresses come back whatever the request names.
	strict bool
	// read counts the addresses this socket's dumps have parsed, for tests.
	read int
}

// open opens the socket if there is none. Called with c.mu held.
func (c *routeConn) open() error {
	if c.sh != nil {
		return nil
	}
	sock, err := openSocket(unix.NETLINK_ROUTE, ipsetTimeout)
	if err != nil {
		return err
	}
	c.sh = &nl.SocketHandle{Socket: sock}
	c.strict = unix.SetsockoptInt(sock.GetFd(), unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1) == nil
	return nil
}

// filters reports whether the kernel answers this socket's address dumps for the one
// interface asked (strict), opening it first; false when it cannot be opened.
func (c *routeConn) filters() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open() == nil && c.strict
}

// close drops the socket; the next write opens a new one.
func (c *routeConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

// drop closes the socket, after a failure or on close, so the next call opens a new
// one. Called with c.mu held.
func (c *routeConn) drop() {
	if c.sh != nil {
		c.sh.Socket.Close()
		c.sh = nil
	}
}

// WriteAddresses implements kernel.Addresses with netlink batches (sendBatch). Each
// address used to cost a link lookup and an RTM_NEWADDR, each on a fresh socket; a cold
// start binds one address per Service IP. (The kernel still walks the interface's
// address list on every insert, so binding stays quadratic in the address count; both
// proxies pay that.) In route mode it writes our local routes instead (viproutes.go).
func (x *Addresses) WriteAddresses(dev string, ops []kernel.AddressOp) []error {
	if x.LocalRoutes {
		return x.writeRoutes(ops)
	}
	return x.bindAddresses(dev, ops)
}

// bindAddresses binds and unbinds dev's addresses (WriteAddresses without route mode).
func (x *Addresses) bindAddresses(dev string, ops []kernel.AddressOp) []error {
	errs := make([]error, len(ops))
	fail := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = wrapErr(addrOpString(dev, ops[i]), err)
			}
		}
		return errs
	}
	if len(ops) == 0 {
		return errs
	}
	l, err := link(dev)
	if err != nil {
		return fail(err)
	}
	index := uint32(l.Attrs().Index)
	c := &x.route
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.open(); err != nil {
		return fail(err)
	}
	out, sockErr := sendBatch(c.sh, len(ops), func(b []byte, i int, seq uint32) []byte { return append(b, addrMessage(index, ops[i], seq)...) },
		func(i int, en syscall.Errno) error {
			switch {
			case en == syscall.EEXIST && !ops[i].Unbind, en == syscall.EADDRNOTAVAIL && ops[i].Unbind:
				return nil // already as wanted
			}
			return writeErr(addrOpString(dev, ops[i]), en)
		})
	if sockErr != nil {
		c.drop()
	}
	return out
}

func addrOpString(dev string, op kernel.AddressOp) string {
	if op.Unbind {
		return "unbind " + op.Addr.String() + " from " + dev
	}
	return "bind " + op.Addr.String() + " to " + dev
}

// addrMessage encodes RTM_NEWADDR (exclusive create) or RTM_DELADDR of a host address
// (/32 or /128), local and peer address equal, as `ip addr add` and the netlink library
// send it for such an address.
func addrMessage(index uint32, op kernel.AddressOp, seq uint32) []byte {
	typ, flags := uint16(unix.RTM_NEWADDR), uint16(unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	if op.Unbind {
		typ, flags = unix.RTM_DELADDR, unix.NLM_F_REQUEST
	}
	a := op.Addr.Unmap()
	family := nl.FAMILY_V4
	if a.Is6() {
		family = nl.FAMILY_V6
	}
	req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: typ, Flags: flags, Seq: seq}}
	msg := nl.NewIfAddrmsg(family)
	msg.Prefixlen = uint8(a.BitLen())
	msg.Index = index
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFA_LOCAL, a.AsSlice()))
	req.AddData(nl.NewRtAttr(unix.IFA_ADDRESS, a.AsSlice()))
	return req.Serialize()
}
