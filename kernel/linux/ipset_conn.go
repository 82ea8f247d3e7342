package linux

import (
	"errors"
	gosync "sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// ipsetConn holds the netfilter netlink sockets of one IPSets. vishvananda/netlink's
// package functions open and close a socket per request; at a cold start of 10,000
// Services (66,000 set entries) that was a quarter of the time spent adding entries in
// the VM. Requests are serialized on the mutex.
type ipsetConn struct {
	mu   gosync.Mutex
	h    *netlink.Handle          // for the library's Ipset* calls
	raw  map[int]*nl.SocketHandle // for the requests we build ourselves
	sock *nl.NetlinkSocket
}

// ipsetTimeout bounds the wait for one answer.
const ipsetTimeout = 10 * time.Second

// with runs fn with the handle and sockets, opening them on first use. A failed request
// drops them, so a broken socket is replaced by the next call.
func (c *ipsetConn) with(fn func(h *netlink.Handle, raw map[int]*nl.SocketHandle) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		h, err := netlink.NewHandle(unix.NETLINK_NETFILTER)
		if err != nil {
			return err
		}
		sock, err := openSocket(unix.NETLINK_NETFILTER, ipsetTimeout)
		if err != nil {
			h.Close()
			return err
		}
		if err := h.SetSocketTimeout(ipsetTimeout); err != nil { // a lost answer must not stall the sync loop
			h.Close()
			sock.Close()
			return err
		}
		c.h, c.sock, c.raw = h, sock, map[int]*nl.SocketHandle{unix.NETLINK_NETFILTER: {Socket: sock}}
	}
	err := fn(c.h, c.raw)
	if socketBroken(err) {
		c.dropLocked()
	}
	return err
}

// close drops the sockets; the next request opens new ones.
func (c *ipsetConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked()
}

func (c *ipsetConn) dropLocked() {
	if c.h != nil {
		c.h.Close()
		c.sock.Close()
	}
	c.h, c.sock, c.raw = nil, nil, nil
}

// socketBroken reports an error that may leave the socket unusable or out of step
// (an overflowed receive buffer, a timeout with an answer still to come), as opposed to
// the kernel's answer to the request (no such set, element exists, ...).
func socketBroken(err error) bool {
	if err == nil || errors.As(err, new(nl.IPSetError)) {
		return false
	}
	var en unix.Errno
	if !asErrno(err, &en) {
		return true // not an errno: a parse or sequence problem
	}
	switch en {
	case unix.EBADF, unix.ENOBUFS, unix.ENOTSOCK, unix.EAGAIN, unix.EINTR, unix.ECONNRESET:
		return true
	}
	return false
}
