package kernel

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// IPVSHeader is the banner ipvsadm prints first: the IPVS version the Debian and upstream
// kernels report and the default connection-table size (CONFIG_IP_VS_TAB_BITS=12).
const IPVSHeader = "IP Virtual Server version 1.2.1 (size=4096)\n" +
	"Prot LocalAddress:Port Scheduler Flags\n" +
	"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"

// CompareVSKeys orders virtual servers as `ipvsadm -Ln` sorts them: protocol, address, port.
func CompareVSKeys(a, b VSKey) int {
	if c := cmp.Compare(a.Protocol, b.Protocol); c != 0 {
		return c
	}
	if c := a.Address.Compare(b.Address); c != 0 {
		return c
	}
	return cmp.Compare(a.Port, b.Port)
}

// CompareRealServers orders destinations by address, then port, as ipvsadm does.
func CompareRealServers(a, b RealServer) int {
	if c := a.Address.Compare(b.Address); c != 0 {
		return c
	}
	return cmp.Compare(a.Port, b.Port)
}

// FormatVirtualServer prints the service line of `ipvsadm -Ln`, without the newline.
func FormatVirtualServer(vs VirtualServer) string {
	var b strings.Builder
	// ipvsadm pads the protocol to four columns: "TCP  ...", "SCTP ..." (checked in the VM).
	fmt.Fprintf(&b, "%-4s %s ", vs.Protocol, netip.AddrPortFrom(vs.Address, vs.Port))
	vs.VSSettings.format(&b)
	return b.String()
}

// FormatRealServer prints a destination line of `ipvsadm -Ln`, without the newline.
func FormatRealServer(rs RealServer) string {
	return fmt.Sprintf("  -> %-28s %-7s %-6d %-10d %-10d", rs.AddrPort(), "Masq", rs.Weight,
		rs.ActiveConns, rs.InactiveConns)
}

// FormatIPVS prints a table in `ipvsadm -Ln` format, sorted the way ipvsadm sorts it.
func FormatIPVS(vss []VirtualServer, rss map[VSKey][]RealServer) string {
	var b strings.Builder
	b.WriteString(IPVSHeader)
	vss = slices.Clone(vss)
	slices.SortFunc(vss, func(a, b VirtualServer) int { return CompareVSKeys(a.VSKey, b.VSKey) })
	for _, vs := range vss {
		b.WriteString(FormatVirtualServer(vs))
		b.WriteByte('\n')
		dests := slices.Clone(rss[vs.VSKey])
		slices.SortFunc(dests, CompareRealServers)
		for _, rs := range dests {
			b.WriteString(FormatRealServer(rs))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// FormatAddresses prints the addresses of a device, one "inet A/32" or "inet6 A/128" a
// line, sorted, as `ip -br addr` would list them.
func FormatAddresses(dev string, addrs []netip.Addr) string {
	addrs = slices.Clone(addrs)
	slices.SortFunc(addrs, netip.Addr.Compare)
	var b strings.Builder
	for _, a := range addrs {
		kind, bits := "inet", 32
		if FamilyOf(a) == IPv6 {
			kind, bits = "inet6", 128
		}
		fmt.Fprintf(&b, "%s %s/%d scope global %s\n", kind, a, bits, dev)
	}
	return b.String()
}

// FormatLocalRoutes prints Service IPs held as local routes through lo (route mode), as
// `ip route show table local proto 210` lists an IPv4 one and `ip -6 route ...` an IPv6
// one (the kernel gives an IPv6 route without a metric 1024, IP6_RT_PRIO_USER), sorted.
func FormatLocalRoutes(addrs []netip.Addr) string {
	addrs = slices.Clone(addrs)
	slices.SortFunc(addrs, netip.Addr.Compare)
	var b strings.Builder
	for _, a := range addrs {
		if FamilyOf(a) == IPv6 {
			fmt.Fprintf(&b, "local %s dev lo metric 1024 pref medium\n", a)
		} else {
			fmt.Fprintf(&b, "local %s dev lo scope host\n", a)
		}
	}
	return b.String()
}

// FormatSetCreate prints the `ipset save` create line of a set.
func FormatSetCreate(s Set) string {
	if s.Type == BitmapPort {
		return fmt.Sprintf("create %s %s range 0-65535", s.Name, s.Type)
	}
	fam := "inet"
	if s.Family == IPv6 {
		fam = "inet6"
	}
	return fmt.Sprintf("create %s %s family %s hashsize %d maxelem %d", s.Name, s.Type, fam, s.HashSize, s.MaxElem)
}

// FormatSets prints sets and members in `ipset save` format: sets in the given order,
// members sorted by their text.
func FormatSets(sets []Set, members map[string][]SetEntry) string {
	var b strings.Builder
	for _, s := range sets {
		b.WriteString(FormatSetCreate(s))
		b.WriteByte('\n')
		lines := make([]string, 0, len(members[s.Name]))
		for _, e := range members[s.Name] {
			lines = append(lines, "add "+s.Name+" "+e.String())
		}
		slices.Sort(lines)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
