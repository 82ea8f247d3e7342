package linux

import (
	"fmt"
	"net"
	"net/netip"

	ct "github.com/ti-mo/conntrack"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Conntrack reads conntrack statistics over ctnetlink and deletes stale UDP flows.
type Conntrack struct{}

// Stats implements kernel.Conntrack: one global-stats query and one per-CPU stats query,
// never a table dump.
func (Conntrack) Stats() (kernel.ConntrackStats, error) {
	c, err := ct.Dial(nil)
	if err != nil {
		return kernel.ConntrackStats{}, fmt.Errorf("conntrack: %w", err)
	}
	defer c.Close()
	g, err := c.StatsGlobal()
	if err != nil {
		return kernel.ConntrackStats{}, fmt.Errorf("conntrack global stats: %w", err)
	}
	out := kernel.ConntrackStats{Entries: uint64(g.Entries), Max: uint64(g.MaxEntries)}
	cpus, err := c.Stats()
	if err != nil {
		return out, fmt.Errorf("conntrack cpu stats: %w", err)
	}
	for _, s := range cpus {
		out.Drop += uint64(s.Drop)
		out.EarlyDrop += uint64(s.EarlyDrop)
		out.InsertFailed += uint64(s.InsertFailed)
	}
	return out, nil
}

// ClearUDP implements kernel.Conntrack. On Linux 5.8+ the kernel filters the dump
// (clearUDPFiltered), so the table never crosses into user space. Older kernels ignore
// CTA_FILTER; there vishvananda/netlink's filtered delete is used, which dumps the
// family's table (kubernetes#129982) — the price of running on such a kernel.
func (c Conntrack) ClearUDP(vip, endpoint netip.AddrPort) error {
	if major, minor, err := HostSysctls.KernelVersion(); err == nil && (major > 5 || major == 5 && minor >= 8) {
		_, _, err := clearUDPFiltered(vip, endpoint)
		return wrapErr("clear UDP flows to "+vip.String(), err)
	}
	return clearUDPByDump(vip, endpoint)
}

func clearUDPByDump(vip, endpoint netip.AddrPort) error {
	f := &netlink.ConntrackFilter{}
	fam := netlink.InetFamily(unix.AF_INET)
	if vip.Addr().Is6() {
		fam = unix.AF_INET6
	}
	errs := []error{
		f.AddProtocol(unix.IPPROTO_UDP),
		f.AddIP(netlink.ConntrackOrigDstIP, net.IP(vip.Addr().AsSlice())),
		f.AddPort(netlink.ConntrackOrigDstPort, vip.Port()),
	}
	if endpoint.IsValid() {
		errs = append(errs, f.AddIP(netlink.ConntrackReplySrcIP, net.IP(endpoint.Addr().AsSlice())))
	}
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("conntrack filter: %w", err)
		}
	}
	_, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, fam, f)
	return wrapErr("clear UDP flows to "+vip.String(), err)
}
