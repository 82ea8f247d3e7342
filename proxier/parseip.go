package proxier

import (
	"net/netip"
	"strings"

	netutils "k8s.io/utils/net"
)

// ParseAddr parses an IP address of an API object as kube-proxy does
// (netutils.ParseIPSloppy): an IPv4 octet with leading zeros ("10.096.0.170") is read as
// decimal. Go's parser refused those from 1.17 on, but the apiserver accepted them before
// strict IP validation (KEP-4858) and existing objects keep them, so refusing them would
// drop a working Service. A zone, which no API field holds, is refused; an IPv4-mapped
// IPv6 address is returned as IPv4.
func ParseAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), a.Zone() == ""
	}
	ip := netutils.ParseIPSloppy(s)
	if ip == nil {
		return netip.Addr{}, false
	}
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}

// ParsePrefix parses a CIDR as kube-proxy does (netutils.ParseCIDRSloppy), leading
// zeros included, and returns it masked. A range written in IPv4-mapped IPv6 form
// (::ffff:203.0.113.0/120, which the apiserver accepted before strict CIDR validation,
// KEP-4858) is the IPv4 range it maps, 203.0.113.0/24, as kube-proxy's net.IPNet prints
// it: programmed as written, an IPv4 set refuses it. One wider than the mapped space
// (a mask under /96) spans IPv6 addresses that are no IPv4 range: it is not a CIDR here
// (net.IPNet keeps the mask's last 32 bits, 0.0.0.0/0, which would open the firewall).
func ParsePrefix(s string) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return unmapPrefix(p.Addr(), p.Bits())
	}
	_, n, err := netutils.ParseCIDRSloppy(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, size := n.Mask.Size()
	if size == 32 { // an IPv4 mask: its address is IPv4 however it is held
		return unmapPrefix(a.Unmap(), bits)
	}
	return unmapPrefix(a, bits)
}

// unmapPrefix returns a/bits masked, an IPv4-mapped IPv6 range as its IPv4 range.
func unmapPrefix(a netip.Addr, bits int) (netip.Prefix, bool) {
	if a.Is4In6() {
		if bits < 96 {
			return netip.Prefix{}, false
		}
		a, bits = a.Unmap(), bits-96
	}
	p := netip.PrefixFrom(a, bits)
	return p.Masked(), p.IsValid()
}
