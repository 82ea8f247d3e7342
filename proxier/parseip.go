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
// zeros included, and returns it masked.
func ParsePrefix(s string) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	_, n, err := netutils.ParseCIDRSloppy(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), bits).Masked(), true
}
