package linux

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Addresses manages the dummy interface with netlink: writes over one rtnetlink socket,
// the address dump over another, so a full sync's dump of 30,000 addresses never holds
// up a sync's writes.
type Addresses struct{ route, dump routeConn }

// Close drops the sockets; a later call opens new ones.
func (x *Addresses) Close() {
	x.route.close()
	x.dump.close()
}

// EnsureDummy implements kernel.Addresses. The link stays down, as kube-proxy leaves it:
// addresses on a down dummy are still local, and it answers nothing by itself.
func (x *Addresses) EnsureDummy(dev string) error {
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
// objects for each of them at every full sync. An interrupted dump is read again.
func (x *Addresses) ListAddresses(dev string) ([]netip.Addr, error) {
	l, err := link(dev)
	if err != nil {
		return nil, err
	}
	index := uint32(l.Attrs().Index)
	c := &x.dump
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []netip.Addr
	var answer error = netlink.ErrDumpInterrupted
	for try := 0; try < 5 && errors.Is(answer, netlink.ErrDumpInterrupted); try++ {
		if err := c.open(); err != nil {
			return nil, wrapErr("list addresses of "+dev, err)
		}
		req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: unix.RTM_GETADDR}}
		req.AddData(nl.NewIfAddrmsg(unix.AF_UNSPEC))
		out = out[:0]
		var sockErr error
		answer, sockErr = dumpOn(c.sh, req, func(body []byte) {
			if a, ok := parseAddr(body, index); ok {
				out = append(out, a)
			}
		})
		if sockErr != nil {
			c.drop() // the rest of this dump would arrive as the next request's answers
			return nil, wrapErr("list addresses of "+dev, sockErr)
		}
	}
	if answer != nil {
		return nil, wrapErr("list addresses of "+dev, answer)
	}
	return out, nil
}

// parseAddr reads one address of an RTM_GETADDR dump (struct ifaddrmsg, then its
// attributes) if it is on the interface index and not link-local: IFA_LOCAL, or
// IFA_ADDRESS where there is none (IPv6 sends only that).
func parseAddr(body []byte, index uint32) (netip.Addr, bool) {
	if len(body) < unix.SizeofIfAddrmsg || nl.NativeEndian().Uint32(body[4:8]) != index {
		return netip.Addr{}, false
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
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// LocalAddresses returns the node's addresses on every interface but skip (the dummy),
// without loopback and link-local ones: the node IPs NodePorts listen on by default.
func LocalAddresses(skip string) ([]netip.Addr, error) {
	links, err := netlink.LinkList()
	for try := 0; try < 5 && interrupted(err); try++ {
		links, err = netlink.LinkList()
	}
	if err != nil {
		return nil, err
	}
	skipIndex := -1
	for _, l := range links {
		if l.Attrs().Name == skip {
			skipIndex = l.Attrs().Index
		}
	}
	// One dump for every link: the kernel sends every address per dump whatever the
	// link asked for, and the dummy holds one per Service IP, so a dump per link was
	// that many times the work.
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	for try := 0; try < 5 && interrupted(err); try++ {
		addrs, err = netlink.AddrList(nil, netlink.FAMILY_ALL)
	}
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		if a.LinkIndex == skipIndex {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		if ip = ip.Unmap(); ok && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
			out = append(out, ip)
		}
	}
	return out, nil
}
