package linux

import (
	"errors"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Route mode (Addresses.LocalRoutes, --vip-local-routes): each Service IP is a route of
// type local in the local table (`ip route show table local proto 210`), where kube-proxy
// binds it to the dummy as an address. Either makes the kernel deliver the IP's packets
// locally, to IPVS's hooks (a local route is all an address adds to routing: fib_add_ifaddr,
// net/ipv4/fib_frontend.c). A route is inserted into the FIB's trie; an address is also
// appended to the dummy's address list, which every insert walks whole
// (__inet_insert_ifa, net/ipv4/devinet.c), so binding n addresses is quadratic
// (BenchmarkAddressBinds) and set the cold start from 30,000 Service IPs up.
//
// The routes go through lo, not the dummy: when a device loses its last IPv4 address
// the kernel flushes every route through it (fib_disable_ip on NETDEV_DOWN,
// net/ipv4/fib_frontend.c), so converting the dummy's addresses would have flushed
// the routes made for them. They carry RouteProtocol, which marks them ours: nothing
// else of the local table is listed or touched. No preferred source is set, so an
// address's removal never marks them dead (fib_sync_down_addr matches fib_prefsrc);
// a local route's source is then its destination, as with an address.

// RouteProtocol is the routing protocol number (rtm_protocol) of our local routes,
// outside those iproute2's rt_protos names.
const RouteProtocol = 210

// loopbackIndex is lo's interface index, resolved on each call (it is 1 in every
// namespace the kernel makes, but read rather than assumed).
func loopbackIndex() (uint32, error) {
	l, err := link("lo")
	if err != nil {
		return 0, err
	}
	return uint32(l.Attrs().Index), nil
}

// listRoutes returns the destinations of our local routes, of both families.
func (x *Addresses) listRoutes() ([]netip.Addr, error) {
	lo, err := loopbackIndex()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	err = x.dump.dumpRoutes(lo, func() { out = out[:0] }, func(a netip.Addr) { out = append(out, a) })
	if err != nil {
		return nil, wrapErr("list local routes (proto "+strconv.Itoa(RouteProtocol)+")", err)
	}
	return out, nil
}

// dumpRoutes dumps the local table's routes (RTM_GETROUTE) and calls each with the
// destination of every host route of type local through oif with RouteProtocol. With
// strict checking (c.strict) the kernel filters by table, protocol, type and oif
// (ip_valid_fib_dump_req); the same filter is applied here, for kernels without it.
func (c *routeConn) dumpRoutes(oif uint32, restart func(), each func(a netip.Addr)) error {
	return c.dump(func(c *routeConn) *nl.NetlinkRequest {
		req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: unix.RTM_GETROUTE}}
		req.AddData(&nl.RtMsg{RtMsg: unix.RtMsg{Family: unix.AF_UNSPEC, Table: unix.RT_TABLE_LOCAL,
			Protocol: RouteProtocol, Type: unix.RTN_LOCAL}})
		if c.strict {
			req.AddData(nl.NewRtAttr(unix.RTA_OIF, nl.Uint32Attr(oif)))
		}
		return req
	}, restart, func(body []byte) {
		if a, ok := parseLocalRoute(body, oif); ok {
			each(a)
		}
	})
}

// parseLocalRoute reads one route of an RTM_GETROUTE dump (struct rtmsg, then its
// attributes) and reports its destination if it is one of ours: a host route of type
// local in the local table, with RouteProtocol, through oif.
func parseLocalRoute(body []byte, oif uint32) (netip.Addr, bool) {
	if len(body) < unix.SizeofRtMsg {
		return netip.Addr{}, false
	}
	family, dstLen, table, proto, typ := body[0], body[1], uint32(body[4]), body[5], body[7]
	if proto != RouteProtocol || typ != unix.RTN_LOCAL {
		return netip.Addr{}, false
	}
	var dst []byte
	var out uint32
	eachAttr(body[unix.SizeofRtMsg:], func(t uint16, v []byte) {
		switch t {
		case unix.RTA_DST:
			dst = v
		case unix.RTA_OIF:
			out = u32(v)
		case unix.RTA_TABLE:
			table = u32(v)
		}
	})
	a, ok := netip.AddrFromSlice(dst)
	if !ok || table != unix.RT_TABLE_LOCAL || out != oif || int(dstLen) != a.BitLen() ||
		(family == unix.AF_INET) != a.Is4() {
		return netip.Addr{}, false
	}
	return a, true
}

// writeRoutes adds or deletes our local routes, one per op, in netlink batches.
// Adding a route that is there, or deleting one that is not, succeeds.
func (x *Addresses) writeRoutes(ops []kernel.AddressOp) []error {
	errs := make([]error, len(ops))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = wrapErr(routeOpString(ops[i]), err)
		}
		return errs
	}
	if len(ops) == 0 {
		return errs
	}
	lo, err := loopbackIndex()
	if err != nil {
		return fail(err)
	}
	c := &x.route
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.open(); err != nil {
		return fail(err)
	}
	out, sockErr := sendBatch(c.sh, len(ops), func(b []byte, i int, seq uint32) []byte { return append(b, routeMessage(lo, ops[i], seq)...) },
		func(i int, en syscall.Errno) error {
			switch {
			case en == syscall.EEXIST && !ops[i].Unbind, en == syscall.ESRCH && ops[i].Unbind:
				return nil // already as wanted
			}
			return writeErr(routeOpString(ops[i]), en)
		})
	if sockErr != nil {
		c.drop()
	}
	return out
}

func routeOpString(op kernel.AddressOp) string {
	return map[bool]string{false: "add", true: "delete"}[op.Unbind] + " local route " + op.Addr.String() + " (proto " + strconv.Itoa(RouteProtocol) + ")"
}

// routeMessage encodes RTM_NEWROUTE (create, not exclusive: another route to the same
// destination, as an address's own local route, may stay beside ours) or RTM_DELROUTE
// of our local route to op's address through oif: `ip route add local <ip> dev lo table
// local proto 210 scope host`.
func routeMessage(oif uint32, op kernel.AddressOp, seq uint32) []byte {
	typ, flags := uint16(unix.RTM_NEWROUTE), uint16(unix.NLM_F_REQUEST|unix.NLM_F_CREATE)
	if op.Unbind {
		typ, flags = unix.RTM_DELROUTE, unix.NLM_F_REQUEST
	}
	a := op.Addr.Unmap()
	family := uint8(unix.AF_INET)
	if a.Is6() {
		family = unix.AF_INET6
	}
	req := &nl.NetlinkRequest{NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: typ, Flags: flags, Seq: seq}}
	req.AddData(&nl.RtMsg{RtMsg: unix.RtMsg{Family: family, Dst_len: uint8(a.BitLen()), Table: unix.RT_TABLE_LOCAL,
		Protocol: RouteProtocol, Scope: unix.RT_SCOPE_HOST, Type: unix.RTN_LOCAL}})
	req.AddData(nl.NewRtAttr(unix.RTA_DST, a.AsSlice()))
	req.AddData(nl.NewRtAttr(unix.RTA_OIF, nl.Uint32Attr(oif)))
	return req.Serialize()
}

// convert moves what the other mode left to this one's form, once per Addresses: in
// route mode the dummy's addresses (kube-proxy's, or ours without route mode) become
// routes, in address mode our routes become addresses on the dummy. The new form is
// written before the old is removed, so each IP stays local throughout. A failure is
// retried at the next call.
func (x *Addresses) convert(dev string) error {
	x.convertMu.Lock()
	defer x.convertMu.Unlock()
	if x.converted {
		return nil
	}
	listAddrs := func() ([]netip.Addr, error) { return x.dummyAddresses(dev) }
	writeAddrs := func(ops []kernel.AddressOp) []error { return x.bindAddresses(dev, ops) }
	listOld, writeNew, writeOld := x.listRoutes, writeAddrs, x.writeRoutes
	if x.LocalRoutes {
		listOld, writeNew, writeOld = listAddrs, x.writeRoutes, writeAddrs
	}
	old, err := listOld()
	if err != nil {
		return err
	}
	add := make([]kernel.AddressOp, len(old))
	del := make([]kernel.AddressOp, len(old))
	for i, a := range old {
		add[i], del[i] = kernel.AddressOp{Addr: a}, kernel.AddressOp{Addr: a, Unbind: true}
	}
	if err := errors.Join(writeNew(add)...); err != nil {
		return err
	}
	if err := errors.Join(writeOld(del)...); err != nil {
		return err
	}
	x.converted = true
	return nil
}

// DeleteLocalRoutes deletes our local routes (route mode's Service IPs), for cleanup,
// and returns how many there were.
func DeleteLocalRoutes() (int, error) {
	x := &Addresses{LocalRoutes: true}
	defer x.Close()
	vips, err := x.listRoutes()
	if err != nil {
		return 0, err
	}
	ops := make([]kernel.AddressOp, len(vips))
	for i, a := range vips {
		ops[i] = kernel.AddressOp{Addr: a, Unbind: true}
	}
	return len(vips), errors.Join(x.writeRoutes(ops)...)
}
