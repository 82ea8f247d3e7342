package linux

import (
	"errors"
	"fmt"
	"net/netip"
	gosync "sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Addresses manages the dummy interface with netlink: writes over one rtnetlink socket,
// the address dump over another, so a full sync's dump of 30,000 addresses never holds
// up a sync's writes. With LocalRoutes, the Service IPs are local routes instead
// (viproutes.go).
type Addresses struct {
	route, dump routeConn
	// LocalRoutes holds each Service IP as a local route through lo (route mode) rather
	// than as an address on the dummy. Set before first use.
	LocalRoutes bool

	convertMu gosync.Mutex
	converted bool // what the other mode left was converted (convert)
}

// Close drops the sockets; a later call opens new ones.
func (x *Addresses) Close() {
	x.route.close()
	x.dump.close()
}

// EnsureDummy implements kernel.Addresses. The link stays down, as kube-proxy leaves it:
// addresses on a down dummy are still local, and it answers nothing by itself. The
// first success also converts what the other mode left (convert).
func (x *Addresses) EnsureDummy(dev string) error {
	if err := ensureDummy(dev); err != nil {
		return err
	}
	return x.convert(dev)
}

func ensureDummy(dev string) error {
	l, err := netlink.LinkByName(dev)
	if err == nil {
		if _, ok := l.(*netlink.Dummy); !ok {
			return fmt.Errorf("%s is a %s interface: %w; refusing to hold VIPs on it (--dummy-device)", dev, l.Type(), kernel.ErrNotDummy)
		}
		return nil
	}
	var nf netlink.LinkNotFoundError
	if !errors.As(err, &nf) {
		return wrapErr("link "+dev, err)
	}
	err = netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: dev}})
	if err != nil && !errors.Is(wrapErr("", err), kernel.ErrExist) {
		return wrapErr("create dummy "+dev, err)
	}
	return nil
}

func link(dev string) (netlink.Link, error) {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, wrapErr("link "+dev, errors.Join(err, kernel.ErrNotFound))
		}
		return nil, wrapErr("link "+dev, err)
	}
	return l, nil
}

// ListAddresses implements kernel.Addresses; link-local addresses are left out. The
// dump (RTM_GETADDR) is read as it streams in, skipping other interfaces' addresses:
// the dummy holds one address per Service IP, and netlink.AddrList built several
// objects for each of them at every full sync. In route mode it lists our local
// routes instead.
func (x *Addresses) ListAddresses(dev string) ([]netip.Addr, error) {
	if x.LocalRoutes {
		return x.listRoutes()
	}
	return x.dummyAddresses(dev)
}

// dummyAddresses lists dev's addresses (ListAddresses without route mode).
func (x *Addresses) dummyAddresses(dev string) ([]netip.Addr, error) {
	l, err := link(dev)
	if err != nil {
		return nil, err
	}
	index := uint32(l.Attrs().Index)
	var out []netip.Addr
	err = x.dump.dumpAddresses(index, func() { out = out[:0] }, func(i uint32, a netip.Addr) {
		if i == index {
			out = append(out, a)
		}
	})
	if err != nil {
		return nil, wrapErr("list addresses of "+dev, err)
	}
	return out, nil
}

// dumpAddresses dumps the addresses (RTM_GETADDR) of the interface index over c (of
// every interface when index is 0, or when the kernel does not filter: c.strict) and
// calls each with the interface index and address of every one but link-local ones, as
// they stream in. An interrupted dump is read again, after restart.
func (c *routeConn) dumpAddresses(index uint32, restart func(), each func(index uint32, a netip.Addr)) error {
	return c.dump(func(*routeConn) *nl.NetlinkRequest {
		req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: unix.RTM_GETADDR}}
		msg := nl.NewIfAddrmsg(unix.AF_UNSPEC)
		msg.Index = index
		req.AddData(msg)
		return req
	}, restart, func(body []byte) {
		c.read++
		if i, a, ok := parseAddr(body); ok {
			each(i, a)
		}
	})
}

// dump sends the request req builds (for the socket, once open) over c and calls each
// with the body of every answer as it streams in; an interrupted dump is read again,
// after restart.
func (c *routeConn) dump(req func(*routeConn) *nl.NetlinkRequest, restart func(), each func(body []byte)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var answer error = netlink.ErrDumpInterrupted
	for try := 0; try < 5 && errors.Is(answer, netlink.ErrDumpInterrupted); try++ {
		if err := c.open(); err != nil {
			return err
		}
		r := req(c)
		restart()
		var sockErr error
		if answer, sockErr = dumpOn(c.sh, r, each); sockErr != nil {
			c.drop() // the rest of this dump would arrive as the next request's answers
			return sockErr
		}
	}
	return answer
}

// parseAddr reads one address of an RTM_GETADDR dump (struct ifaddrmsg, then its
// attributes) and its interface index, unless it is link-local: IFA_LOCAL, or
// IFA_ADDRESS where there is none (IPv6 sends only that).
func parseAddr(body []byte) (uint32, netip.Addr, bool) {
	if len(body) < unix.SizeofIfAddrmsg {
		return 0, netip.Addr{}, false
	}
	var local, address []byte
	eachAttr(body[unix.SizeofIfAddrmsg:], func(t uint16, v []byte) {
		switch t {
		case unix.IFA_LOCAL:
			local = v
		case unix.IFA_ADDRESS:
			address = v
		}
	})
	if local == nil {
		local = address
	}
	a, ok := netip.AddrFromSlice(local)
	if !ok || a.Unmap().IsLinkLocalUnicast() {
		return 0, netip.Addr{}, false
	}
	return nl.NativeEndian().Uint32(body[4:8]), a.Unmap(), true
}

// localDump is LocalAddresses' socket, kept between full syncs.
var localDump routeConn

// LocalAddresses returns the node's addresses on every interface but skip (the dummy),
// without loopback and link-local ones: the node IPs NodePorts listen on by default.
// Every full sync reads them. The dummy holds one address per Service IP, so one dump of
// every interface's addresses read 45,000 to keep a handful at 30,000 Services, a fifth
// of a periodic full sync's CPU in the emulated VM (a CPU profile of `make bench-scale`; run
// profile-30000 in bench/results/README.md's earlier runs):
// where the kernel filters by interface (routeConn.strict) each other interface's
// addresses are dumped alone. Elsewhere one dump, read as it streams in (dumpAddresses):
// netlink.AddrList built ~30 MB of objects for the dummy's at every full sync
// (a heap profile of `make bench-scale`).
func LocalAddresses(skip string) ([]netip.Addr, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, wrapErr("list links", err)
	}
	skipIndex := uint32(0) // no interface has index 0
	for _, l := range links {
		if l.Attrs().Name == skip {
			skipIndex = uint32(l.Attrs().Index)
		}
	}
	var out []netip.Addr
	dump := func(index uint32) error {
		start := len(out)
		return localDump.dumpAddresses(index, func() { out = out[:start] }, func(i uint32, a netip.Addr) {
			if i != skipIndex && (index == 0 || i == index) && !a.IsLoopback() {
				out = append(out, a)
			}
		})
	}
	if !localDump.filters() {
		if err := dump(0); err != nil {
			return nil, wrapErr("list addresses", err)
		}
		return out, nil
	}
	for _, l := range links {
		if i := uint32(l.Attrs().Index); i != skipIndex {
			if err := dump(i); err != nil && !errors.Is(err, unix.ENODEV) { // ENODEV: gone since the list
				return nil, wrapErr("list addresses of "+l.Attrs().Name, err)
			}
		}
	}
	return out, nil
}
