package linux

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Addresses manages the dummy interface with netlink.
type Addresses struct{ route routeConn }

// Close drops the socket; a later write opens a new one.
func (x *Addresses) Close() { x.route.close() }

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

// ListAddresses implements kernel.Addresses; link-local addresses are left out.
func (x *Addresses) ListAddresses(dev string) ([]netip.Addr, error) {
	l, err := link(dev)
	if err != nil {
		return nil, err
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	for try := 0; try < 5 && interrupted(err); try++ {
		addrs, err = netlink.AddrList(l, netlink.FAMILY_ALL)
	}
	if err != nil {
		return nil, wrapErr("list addresses of "+dev, err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || ip.Unmap().IsLinkLocalUnicast() {
			continue
		}
		out = append(out, ip.Unmap())
	}
	return out, nil
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
