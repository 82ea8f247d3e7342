package linux

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestLocalRoutesReal: in route mode a Service IP becomes local (a host socket on the
// wildcard address answers a connection to it) when written and stops being local when
// deleted; the listing returns exactly our routes, never a local route of another
// protocol; writing what is there, or deleting what is not, succeeds; cleanup's
// DeleteLocalRoutes removes ours only.
func TestLocalRoutesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	x := &Addresses{LocalRoutes: true}
	defer x.Close()
	vips := []netip.Addr{netip.MustParseAddr("10.96.0.10"), netip.MustParseAddr("fd00:96::10")}
	foreign := netip.MustParseAddr("10.96.0.99")
	lo, err := loopbackIndex()
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's local route (proto static): never listed, never deleted.
	route := &netlink.Route{LinkIndex: int(lo), Dst: hostNet(foreign), Table: unix.RT_TABLE_LOCAL,
		Type: unix.RTN_LOCAL, Scope: netlink.SCOPE_HOST, Protocol: unix.RTPROT_STATIC}
	if err := netlink.RouteAdd(route); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.RouteDel(route) }) // the VM runs these tests outside a netns of their own
	ops := func(unbind bool) []kernel.AddressOp {
		var out []kernel.AddressOp
		for _, a := range vips {
			out = append(out, kernel.AddressOp{Addr: a, Unbind: unbind})
		}
		return out
	}
	for range 2 { // the second time, every route is there already
		for i, err := range x.WriteAddresses("unused", ops(false)) {
			if err != nil {
				t.Fatalf("add %s: %v", vips[i], err)
			}
		}
	}
	got, err := x.ListAddresses("unused")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, netip.Addr.Compare)
	if !slices.Equal(got, vips) {
		t.Fatalf("listed %v, want %v", got, vips)
	}
	for _, a := range vips {
		if !answers(t, a) {
			t.Errorf("%s: not local after its route was added", a)
		}
	}
	for range 2 { // the second time, none is there
		for i, err := range x.WriteAddresses("unused", ops(true)) {
			if err != nil {
				t.Fatalf("delete %s: %v", vips[i], err)
			}
		}
	}
	if got, err := x.ListAddresses("unused"); err != nil || len(got) != 0 {
		t.Fatalf("after deletion listed %v, %v", got, err)
	}
	for _, a := range vips {
		if answers(t, a) {
			t.Errorf("%s: still local after its route was deleted", a)
		}
	}
	if !answers(t, foreign) {
		t.Errorf("%s: the foreign local route was touched", foreign)
	}
	// cleanup's removal: ours gone, counted; the foreign one kept.
	for i, err := range x.WriteAddresses("unused", ops(false)) {
		if err != nil {
			t.Fatalf("add %s: %v", vips[i], err)
		}
	}
	if n, err := DeleteLocalRoutes(); err != nil || n != len(vips) {
		t.Errorf("DeleteLocalRoutes: %d, %v; want %d", n, err, len(vips))
	}
	if got, err := x.ListAddresses("unused"); err != nil || len(got) != 0 {
		t.Errorf("after DeleteLocalRoutes listed %v, %v", got, err)
	}
	if !answers(t, foreign) {
		t.Errorf("%s: DeleteLocalRoutes touched the foreign local route", foreign)
	}
}

// TestConvertModesReal: route mode converts the addresses bound to the device (as
// kube-proxy or address mode left them) to routes, each address local throughout
// and none left on the device; address mode converts our routes back to addresses.
func TestConvertModesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	addVeth(t, "vipconv0", "vipconv1") // the host kernel has no dummy; conversion needs none
	vips := []netip.Addr{netip.MustParseAddr("10.96.1.1"), netip.MustParseAddr("10.96.1.2")}
	addrs := &Addresses{}
	defer addrs.Close()
	for _, a := range vips {
		if err := addrs.WriteAddresses("vipconv0", []kernel.AddressOp{{Addr: a}})[0]; err != nil {
			t.Fatal(err)
		}
	}
	routes := &Addresses{LocalRoutes: true}
	defer routes.Close()
	if err := routes.convert("vipconv0"); err != nil {
		t.Fatal(err)
	}
	onDev, err := addrs.dummyAddresses("vipconv0")
	if err != nil || len(onDev) != 0 {
		t.Fatalf("after conversion to routes the device holds %v, %v", onDev, err)
	}
	listed, err := routes.ListAddresses("vipconv0")
	slices.SortFunc(listed, netip.Addr.Compare)
	if err != nil || !slices.Equal(listed, vips) {
		t.Fatalf("routes listed %v, %v; want %v", listed, err, vips)
	}
	for _, a := range vips {
		if !answers(t, a) {
			t.Errorf("%s: not local once its address became a route", a)
		}
	}
	back := &Addresses{}
	defer back.Close()
	if err := back.convert("vipconv0"); err != nil {
		t.Fatal(err)
	}
	if left, err := routes.listRoutes(); err != nil || len(left) != 0 {
		t.Fatalf("after conversion back our routes are %v, %v", left, err)
	}
	onDev, err = back.ListAddresses("vipconv0")
	slices.SortFunc(onDev, netip.Addr.Compare)
	if err != nil || !slices.Equal(onDev, vips) {
		t.Fatalf("after conversion back the device holds %v, %v; want %v", onDev, err, vips)
	}
	for _, a := range vips {
		if !answers(t, a) {
			t.Errorf("%s: not local once its route became an address again", a)
		}
	}
}

// TestParseLocalRoute: only a host route of type local in the local table, with our
// protocol, through the given interface is ours.
func TestParseLocalRoute(t *testing.T) {
	const lo = 1
	ours := kernel.AddressOp{Addr: netip.MustParseAddr("10.96.0.1")}
	body := func(mutate func(b []byte)) []byte {
		b := routeMessage(lo, ours, 1)[unix.SizeofNlMsghdr:]
		b = slices.Clone(b)
		if mutate != nil {
			mutate(b)
		}
		return b
	}
	if a, ok := parseLocalRoute(body(nil), lo); !ok || a != ours.Addr {
		t.Fatalf("our own message parsed as %v, %v", a, ok)
	}
	for name, m := range map[string]func([]byte){
		"other protocol": func(b []byte) { b[5] = unix.RTPROT_KERNEL },
		"unicast":        func(b []byte) { b[7] = unix.RTN_UNICAST },
		"main table":     func(b []byte) { b[4] = unix.RT_TABLE_MAIN },
		"a /24":          func(b []byte) { b[1] = 24 },
	} {
		if a, ok := parseLocalRoute(body(m), lo); ok {
			t.Errorf("%s: parsed as ours (%s)", name, a)
		}
	}
	if a, ok := parseLocalRoute(body(nil), lo+1); ok {
		t.Errorf("another interface: parsed as ours (%s)", a)
	}
}

// answers reports whether a TCP connection to a reaches a listener on the wildcard
// address: the kernel delivers a locally.
func answers(t *testing.T, a netip.Addr) bool {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(a, uint16(port)).String(), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func hostNet(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}
