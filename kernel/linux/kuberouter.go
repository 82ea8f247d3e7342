package linux

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// kube-router's service proxy names (github.com/cloudnativelabs/kube-router/v2,
// pkg/controllers/proxy). It leaves all of them when it stops (SIGTERM tears nothing
// down), and its own --cleanup-config flushes every virtual server of the host, ours
// included (cleanupIpvsFirewall and Cleanup in network_services_controller.go), so
// `ipvs-proxier cleanup` removes them by these exact names and nothing else.
const (
	// KubeRouterDummy holds each ClusterIP, external and load-balancer IP as a /32,
	// with `ip route replace local IP dev kube-dummy-if table local` beside it
	// (KubeDummyIf, network_services_controller.go; ipAddrAdd, linux_networking.go).
	KubeRouterDummy = "kube-dummy-if"
	// KubeRouterDSRTable holds `local default dev lo`, which every sync adds (for
	// DSR, even when no Service asks for it: setupPolicyRoutingForDSR,
	// linux_networking.go; customDSRRouteTableID).
	KubeRouterDSRTable = 78
	// KubeRouterExternalIPTable is looked up by `ip rule add prio 32765 from all
	// lookup 79`, which every sync adds (setupRoutesForExternalIPForDSR,
	// linux_networking.go; externalIPRouteTableID).
	KubeRouterExternalIPTable        = 79
	KubeRouterExternalIPRulePriority = 32765
)

// KubeRouterChains are kube-router's chains by table: filter KUBE-ROUTER-SERVICES,
// jumped to from INPUT for destinations in kube-router-svip, ACCEPTs the
// kube-router-svip-prt pairs and REJECTs the rest to a non-local address
// (setupIpvsFirewall); nat KUBE-ROUTER-HAIRPIN, jumped to from POSTROUTING with `-m
// ipvs --vdir ORIGINAL` (ensureHairpinChain, utils.go). RemoveChains deletes the jumps
// with them.
var KubeRouterChains = map[string][]string{
	"filter": {"KUBE-ROUTER-SERVICES"},
	"nat":    {"KUBE-ROUTER-HAIRPIN"},
}

// KubeRouterSets are kube-router's ipsets, the IPv6 ones named with an "inet6:" prefix
// (localIPsIPSetName, serviceIPsIPSetName, serviceIPPortsSetName in
// network_services_controller.go; getIPSetName, utils.go).
var KubeRouterSets = []string{
	"kube-router-local-ips", "kube-router-svip", "kube-router-svip-prt",
	"inet6:kube-router-local-ips", "inet6:kube-router-svip", "inet6:kube-router-svip-prt",
}

// IsKubeRouterMasquerade reports whether an iptables-save line is one of the nat
// POSTROUTING rules kube-router adds to masquerade IPVS traffic
// (ensureMasqueradeIptablesRule, network_services_controller.go): `-m ipvs --ipvs
// --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source NODEIP`,
// with --masquerade-all; per pod CIDR the same with `! -s CIDR ! -d CIDR` before it; each
// with --random-fully where iptables has it; and the `-j MASQUERADE` forms of older
// releases it deletes itself (deleteBadMasqueradeIptablesRules). The empty comment is
// its mark: nothing else of a node writes that spec.
func IsKubeRouterMasquerade(line string) bool {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "-A" || f[1] != "POSTROUTING" {
		return false
	}
	f = f[2:]
	if len(f) >= 6 && f[0] == "!" && f[1] == "-s" && f[3] == "!" && f[4] == "-d" && f[2] == f[5] {
		if _, err := netip.ParsePrefix(f[2]); err != nil {
			return false
		}
		f = f[6:]
	}
	// kube-router writes --ipvs; iptables-save prints the rule without it (libxt_ipvs
	// prints the flag only when negated).
	if len(f) > 2 && f[0] == "-m" && f[1] == "ipvs" && f[2] == "--ipvs" {
		f = slices.Delete(slices.Clone(f), 2, 3)
	}
	match := strings.Fields(`-m ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment ""`)
	if len(f) < len(match) || !slices.Equal(f[:len(match)], match) {
		return false
	}
	f = f[len(match):]
	if len(f) > 0 && f[len(f)-1] == "--random-fully" {
		f = f[:len(f)-1]
	}
	switch {
	case len(f) == 2 && f[0] == "-j" && f[1] == "MASQUERADE":
		return true
	case len(f) == 4 && f[0] == "-j" && f[1] == "SNAT" && f[2] == "--to-source":
		_, err := netip.ParseAddr(f[3])
		return err == nil
	}
	return false
}

// RemoveKubeRouterMasquerade deletes the family's rules IsKubeRouterMasquerade matches,
// in one iptables-restore --noflush, and returns how many there were.
func (t *Iptables) RemoveKubeRouterMasquerade(f kernel.Family) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	all, err := t.saveAll(f)
	if err != nil {
		return 0, err
	}
	var b strings.Builder
	n := 0
	for _, line := range all["nat"] {
		if IsKubeRouterMasquerade(line) {
			b.WriteString("-D" + line[2:] + "\n")
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	cmd := command(t.bin(f, "-restore"), "-w", "5", "--noflush")
	cmd.Stdin = strings.NewReader("*nat\n" + b.String() + "COMMIT\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s (nat): %w: %s", cmd.Path, err, out)
	}
	return n, nil
}

// KubeRouterAddresses returns the addresses on kube-dummy-if (kube-router's Service
// IPs), none when it does not exist. An interface of that name that is no dummy is
// refused: what is on it is not kube-router's.
func KubeRouterAddresses() ([]netip.Addr, error) {
	if err := CheckDummy(KubeRouterDummy); err != nil {
		return nil, err
	}
	addrs, err := (&Addresses{}).dummyAddresses(KubeRouterDummy)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, nil
	}
	return addrs, err
}

// KeepLocalRoutes makes sure each of addrs, bound on both from and to, keeps a local
// route through to when from goes. kube-router replaces the kernel's local route of
// each of its IPs with one through its dummy (`ip route replace local IP dev
// kube-dummy-if table local`, ipAddrAdd in linux_networking.go): where it ran after
// the address was bound on to, that replace took to's route, and deleting from
// would leave the address with no local route, its packets no longer delivered to
// IPVS. The route added is the one the kernel makes for an address (fib_add_ifaddr,
// net/ipv4/fib_frontend.c: proto kernel, scope host, the address as source), appended
// so that, where it still exists, the kernel's own answers EEXIST and nothing changes.
// IPv6 addresses are skipped: an IPv6 route is keyed by its metric too, and the
// replace (metric 1024) never takes the address's own local route (metric 0).
func KeepLocalRoutes(from, to string, addrs []netip.Addr) (added int, err error) {
	if len(addrs) == 0 {
		return 0, nil
	}
	l, err := link(to)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, a := range addrs {
		if !a.Is4() {
			continue
		}
		r := &netlink.Route{
			LinkIndex: l.Attrs().Index, Dst: netlink.NewIPNet(a.AsSlice()), Table: unix.RT_TABLE_LOCAL,
			Type: unix.RTN_LOCAL, Scope: netlink.SCOPE_HOST, Protocol: unix.RTPROT_KERNEL, Src: a.AsSlice(),
		}
		switch err := netlink.RouteAppend(r); {
		case errors.Is(err, unix.EEXIST):
		case err != nil:
			errs = append(errs, fmt.Errorf("append local route %s dev %s (before deleting %s): %w", a, to, from, err))
		default:
			added++
		}
	}
	return added, errors.Join(errs...)
}

// RemoveKubeRouterRoutes deletes, in both families, kube-router's policy rule (priority
// 32765, from all, lookup 79, nothing else) and the `local default dev lo` route of its
// table 78, and returns how many it deleted. Other rules and routes, in those tables
// too, stay: routes kube-router adds to table 79 for DSR external IPs name their
// Service's address and are left, unreachable once the rule is gone.
func RemoveKubeRouterRoutes() (int, error) {
	lo, err := loopbackIndex()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rules, err := netlink.RuleListFiltered(family, &netlink.Rule{Table: KubeRouterExternalIPTable}, netlink.RT_FILTER_TABLE)
		if err != nil {
			errs = append(errs, wrapErr("list ip rules", err))
		}
		for _, r := range rules {
			if !IsKubeRouterRule(r) {
				continue
			}
			if err := netlink.RuleDel(&r); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, wrapErr("delete ip rule prio 32765 lookup 79", err))
				continue
			}
			n++
		}
		routes, err := netlink.RouteListFiltered(family, &netlink.Route{Table: KubeRouterDSRTable}, netlink.RT_FILTER_TABLE)
		if err != nil {
			errs = append(errs, wrapErr("list routes of table 78", err))
		}
		for _, r := range routes {
			if r.Type != unix.RTN_LOCAL || r.LinkIndex != int(lo) || (r.Dst != nil && !isDefault(r.Dst)) {
				continue
			}
			if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, wrapErr("delete local default route of table 78", err))
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// IsKubeRouterRule reports whether r is exactly kube-router's `ip rule add prio 32765
// from all lookup 79`: no selector, no mark, no interface, plain lookup.
func IsKubeRouterRule(r netlink.Rule) bool {
	return r.Priority == KubeRouterExternalIPRulePriority && r.Table == KubeRouterExternalIPTable &&
		(r.Src == nil || isDefault(r.Src)) && (r.Dst == nil || isDefault(r.Dst)) &&
		r.Mark == 0 && (r.Mask == nil || *r.Mask == 0) && r.IifName == "" && r.OifName == "" &&
		!r.Invert && r.Goto <= 0 && r.Flow <= 0 && r.TunID == 0 && r.Tos == 0 &&
		(r.Type == 0 || r.Type == unix.FR_ACT_TO_TBL) &&
		r.Dport == nil && r.Sport == nil && r.IPProto == 0 && r.UIDRange == nil
}

// isDefault reports whether n is 0.0.0.0/0 or ::/0 (netlink reports "from all" and a
// default route's destination as nil or as these).
func isDefault(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0 && n.IP.IsUnspecified()
}
