// Package kernel is the seam between ipvs-proxier and the Linux kernel: IPVS virtual and
// real servers, addresses on the dummy interface, ipset entries, iptables rule sets and
// conntrack. It knows nothing about Kubernetes; every type here is a plain kernel object.
package kernel

import (
	"fmt"
	"net/netip"
	"strings"
)

// Protocol is an IPVS / ipset transport protocol.
type Protocol uint8

// Protocols IPVS can balance. The numbers are the IANA protocol numbers the kernel uses.
const (
	TCP  Protocol = 6
	UDP  Protocol = 17
	SCTP Protocol = 132
)

// String returns the protocol as ipvsadm prints it (TCP, UDP, SCTP).
func (p Protocol) String() string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	case SCTP:
		return "SCTP"
	}
	return fmt.Sprintf("proto-%d", uint8(p))
}

// Lower returns the protocol as ipset and iptables spell it (tcp, udp, sctp).
func (p Protocol) Lower() string { return strings.ToLower(p.String()) }

// Family is an IP address family.
type Family uint8

// The two families; the zero value is invalid.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// FamilyOf returns the family of a valid address.
func FamilyOf(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return IPv4
	}
	return IPv6
}

// String returns "IPv4" or "IPv6".
func (f Family) String() string {
	if f == IPv6 {
		return "IPv6"
	}
	return "IPv4"
}

// VSKey identifies an IPVS virtual server: protocol, address and port.
type VSKey struct {
	Protocol Protocol
	Address  netip.Addr
	Port     uint16
}

// String prints the key as "TCP 10.0.0.1:80" or "TCP [fd00::1]:80".
func (k VSKey) String() string {
	return k.Protocol.String() + " " + netip.AddrPortFrom(k.Address, k.Port).String()
}

// VirtualServer is an IPVS service: the address, port and protocol clients connect to,
// and how it balances them.
type VirtualServer struct {
	VSKey
	VSSettings
}

// Equal reports whether two virtual servers have the same key and settings.
func (v VirtualServer) Equal(o VirtualServer) bool {
	return v.VSKey == o.VSKey && v.VSSettings.Equal(o.VSSettings)
}

// RealServer is an IPVS destination behind a virtual server. Forwarding is always
// masquerading (NAT).
type RealServer struct {
	Address netip.Addr
	Port    uint16
	Weight  int32
	// ActiveConns and InactiveConns are read from the kernel; ignored on writes.
	ActiveConns   int32
	InactiveConns int32
}

// AddrPort returns the destination's address and port.
func (r RealServer) AddrPort() netip.AddrPort { return netip.AddrPortFrom(r.Address, r.Port) }

// Connections is the number of IPVS connection entries still using the destination.
func (r RealServer) Connections() int { return int(r.ActiveConns) + int(r.InactiveConns) }

// DumpedVS is a virtual server as a dump found it, with its traffic counters: the syncer
// keeps the virtual server, and /metrics and /status read the counters of the full sync's
// last dump instead of dumping every virtual server again per request.
type DumpedVS struct {
	VirtualServer
	Stats VSStats
}

// VSStats are a virtual server's traffic counters since it was created (the kernel's
// 64-bit ones where it sends them, Linux 4.x+; else the 32-bit ones).
type VSStats struct {
	Connections uint64
	PacketsIn   uint64
	PacketsOut  uint64
	BytesIn     uint64
	BytesOut    uint64
}
