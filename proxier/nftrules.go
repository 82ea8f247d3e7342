package proxier

import (
	"fmt"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Base chains of our nftables table. Our table has its own hooks, so no rule goes into a
// chain someone else owns. The priorities are iptables' for the same tables (nat
// -100/100, filter 0), so IPVS (LOCAL_IN at 98, LOCAL_OUT at -99) sees packets in the
// same order as with the iptables backend.
const (
	nftNatPrerouting  = "nat-prerouting"
	nftNatOutput      = "nat-output"
	nftNatPostrouting = "nat-postrouting"
	nftFilterInput    = "filter-input"
	nftFilterForward  = "filter-forward"
	nftFilterOutput   = "filter-output"
	// nftFilterOutputPreIPVS runs before IPVS rewrites a local client's packet (LOCAL_OUT
	// at -99), so the out filter matches the VIP itself: nftables has no match on IPVS
	// connections, which iptables' `-m ipvs --vaddr` gives the iptables backend.
	nftFilterOutputPreIPVS = "filter-output-pre-ipvs"
	// chainFilterNodePort is the filter table's KUBE-NODE-PORT: one table holds both, so
	// the name differs.
	chainFilterNodePort = "KUBE-NODE-PORT-FILTER"
)

// NftChains lists our table's chains in the order RenderNftRules declares them.
var NftChains = []string{
	nftNatPrerouting, nftNatOutput, nftNatPostrouting,
	nftFilterInput, nftFilterForward, nftFilterOutput, nftFilterOutputPreIPVS,
	chainServices, chainLoadBalancer, chainNodePort, chainPostrouting, chainMarkMasq,
	chainForward, chainFilterNodePort, chainProxyFirewall, chainSourceRangeFirewall,
	chainIPVSFilter, chainIPVSOutFilter, chainExternalNoLocal, chainClusterIPsCheck,
}

// RenderNftRules renders our table's chains for family f as `nft list table` prints them
// (sets are the IPSets backend's, so they are not in it). Each rule does what the rule of
// the same place in RenderIptablesRules does, with the same sets; the differences:
//   - `-m physdev ! --physdev-is-in` has no nftables match outside the bridge family. The
//     rule holding it only ends the nat walk early for traffic already marked, and the
//     rule after it accepts every external IP that is local, so it is left out: nothing
//     reaches a different verdict.
//   - the out filter runs before IPVS (nftFilterOutputPreIPVS) and matches the VIP as
//     destination, instead of `-m ipvs --vaddr` after it.
func RenderNftRules(cfg *Config, f kernel.Family, outFilters []OutFilter) string {
	r := &nftWriter{f: f, ip: "ip", mark: fmt.Sprintf("0x%08x", cfg.masqueradeMark())}
	if f == kernel.IPv6 {
		r.ip = "ip6"
	}
	r.b.WriteString("table " + r.ip + " " + NftTable + " {\n")
	r.base(cfg)
	r.nat(cfg)
	r.filter(cfg, outFilters)
	r.b.WriteString("}\n")
	return r.b.String()
}

// nftWriter accumulates one table's text.
type nftWriter struct {
	b    strings.Builder
	f    kernel.Family
	ip   string // "ip" or "ip6"
	mark string // the masquerade mark, as nft prints it
	open bool   // a chain is open
}

// chain opens a chain, closing the previous one; hook, when set, is its base chain line.
func (r *nftWriter) chain(name, hook string) {
	r.end()
	fmt.Fprintf(&r.b, "\tchain %s {\n", name)
	if hook != "" {
		fmt.Fprintf(&r.b, "\t\t%s; policy accept;\n", hook)
	}
	r.open = true
}

// end closes the open chain.
func (r *nftWriter) end() {
	if r.open {
		r.b.WriteString("\t}\n")
		r.open = false
	}
}

// w writes one rule.
func (r *nftWriter) w(format string, args ...any) {
	r.b.WriteString("\t\t")
	fmt.Fprintf(&r.b, format, args...)
	r.b.WriteString("\n")
}

// key is a set lookup's key: "dst,dst" is address . protocol . port (hash:ip,port),
// "src,dst" takes the address from the source, "dst,dst,src" adds the source address
// (hash:ip,port,ip and hash:ip,port,net), "dst" the destination address (hash:ip).
func (r *nftWriter) key(dirs string) string {
	switch dirs {
	case "dst":
		return r.ip + " daddr"
	case "src,dst":
		return r.ip + " saddr . meta l4proto . th dport"
	case "dst,dst,src":
		return r.ip + " daddr . meta l4proto . th dport . " + r.ip + " saddr"
	}
	return r.ip + " daddr . meta l4proto . th dport"
}

// in is a lookup of the family's set base with the given key directions.
func (r *nftWriter) in(base, dirs string) string {
	return r.key(dirs) + " @" + SetName(base, r.f)
}

// comment is an nft rule comment.
func comment(s string) string { return fmt.Sprintf(" comment %q", s) }

// base writes the base chains: the hooks, each jumping to the chains iptables' built-in
// chains jump to.
func (r *nftWriter) base(cfg *Config) {
	portals := comment("kubernetes service portals")
	r.chain(nftNatPrerouting, "type nat hook prerouting priority dstnat")
	r.w("jump %s%s", chainServices, portals)
	r.chain(nftNatOutput, "type nat hook output priority -100")
	r.w("jump %s%s", chainServices, portals)
	r.chain(nftNatPostrouting, "type nat hook postrouting priority srcnat")
	r.w("jump %s%s", chainPostrouting, comment("kubernetes postrouting rules"))
	firewall := comment("kube-proxy firewall rules")
	unallocated := comment("kubernetes unallocated cluster ips")
	r.chain(nftFilterInput, "type filter hook input priority filter")
	r.w("jump %s%s", chainFilterNodePort, comment("kubernetes health check rules"))
	r.w("jump %s%s", chainProxyFirewall, firewall)
	r.w("jump %s%s", chainIPVSFilter, comment("kubernetes ipvs access filter"))
	r.chain(nftFilterForward, "type filter hook forward priority filter")
	r.w("jump %s%s", chainProxyFirewall, firewall)
	r.w("jump %s%s", chainForward, comment("kubernetes forwarding rules"))
	r.w("ct state new jump %s%s", chainClusterIPsCheck, unallocated)
	r.chain(nftFilterOutput, "type filter hook output priority filter")
	r.w("ct state new jump %s%s", chainClusterIPsCheck, unallocated)
	r.chain(nftFilterOutputPreIPVS, "type filter hook output priority mangle")
	r.w("jump %s%s", chainIPVSOutFilter, comment("kubernetes ipvs access filter"))
}

// nat writes the nat chains: the service portals, masquerade marking and SNAT.
func (r *nftWriter) nat(cfg *Config) {
	w, in := r.w, r.in
	lo := "127.0.0.0/8"
	if r.f == kernel.IPv6 {
		lo = "::1"
	}
	r.chain(chainServices, "")
	w("%s saddr %s return", r.ip, lo)
	w("%s jump %s%s", in(setLoadBalancer, "dst,dst"), chainLoadBalancer, comment("Kubernetes service lb portal"))
	clusterDirs, detect := "dst,dst", ""
	switch local := cfg.nftLocalMatch(r.f); {
	case cfg.MasqueradeAll:
	case local != "":
		detect = " " + negate(local)
	default:
		clusterDirs = "src,dst" // as the iptables backend: no way to tell pod traffic apart
	}
	w("%s%s jump %s%s", in(setClusterIP, clusterDirs), detect, chainMarkMasq,
		comment("Kubernetes service cluster ip + port for masquerade purpose"))
	w("%s jump %s%s", in(setExternalIP, "dst,dst"), chainMarkMasq,
		comment("Kubernetes service external ip + port for masquerade and filter purpose"))
	for _, s := range []string{setExternalIP, setExternalIPLocal} {
		w("%s fib daddr type local accept", in(s, "dst,dst"))
	}
	w("fib daddr type local jump %s", chainNodePort)
	w("%s accept", in(setClusterIP, "dst,dst"))
	w("%s accept", in(setLoadBalancer, "dst,dst"))
	r.chain(chainLoadBalancer, "")
	w("%s return", in(setLoadBalancerLocal, "dst,dst"))
	w("jump %s", chainMarkMasq)
	r.chain(chainNodePort, "")
	for _, p := range []struct{ proto, local, all string }{
		{"tcp", setNodePortLocalTCP, setNodePortTCP},
		{"udp", setNodePortLocalUDP, setNodePortUDP},
	} {
		w("%s dport @%s return", p.proto, SetName(p.local, r.f))
		w("%s dport @%s jump %s", p.proto, SetName(p.all, r.f), chainMarkMasq)
	}
	w("%s return", in(setNodePortLocalSCTP, "dst,dst"))
	w("%s jump %s", in(setNodePortSCTP, "dst,dst"), chainMarkMasq)
	r.chain(chainPostrouting, "")
	w("%s masquerade%s", in(setLoopBack, "dst,dst,src"),
		comment("Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"))
	w("meta mark & %s != %s return", r.mark, r.mark)
	w("meta mark set meta mark ^ %s", r.mark)
	w("masquerade fully-random%s", comment("kubernetes service traffic requiring SNAT"))
	r.chain(chainMarkMasq, "")
	w("meta mark set meta mark | %s", r.mark)
}

// filter writes the filter chains: the firewalls, the VIP access filter, the ETP=Local
// drop and the unallocated-ClusterIP check.
func (r *nftWriter) filter(cfg *Config, outFilters []OutFilter) {
	w, in := r.w, r.in
	r.chain(chainForward, "")
	w("meta mark & %s == %s accept%s", r.mark, r.mark, comment("kubernetes forwarding rules"))
	w("ct state established,related accept%s", comment("kubernetes forwarding conntrack rule"))
	r.chain(chainFilterNodePort, "")
	w("tcp dport @%s accept", SetName(setHealthCheckNodePort, r.f))
	r.chain(chainProxyFirewall, "")
	w("%s jump %s", in(setLoadBalancerFW, "dst,dst"), chainSourceRangeFirewall)
	// kubernetes#78994: a Service with no usable endpoint refuses new connections at once.
	w("ct state new %s reject%s", in(setNoEndpoints, "dst,dst"), comment("service has no endpoints"))
	w("ct state new %s jump %s", in(setExternalNoLocal, "dst,dst"), chainExternalNoLocal)
	r.chain(chainSourceRangeFirewall, "")
	w("%s return", in(setLoadBalancerSrcCIDR, "dst,dst,src"))
	w("%s return", in(setLoadBalancerSrcIP, "dst,dst,src"))
	w("drop")
	// kubernetes#72236: VIPs accept only service ports, never the node's own listeners.
	r.chain(chainIPVSFilter, "")
	for _, s := range []string{setLoadBalancer, setClusterIP, setExternalIP, setExternalIPLocal} {
		w("%s return", in(s, "dst,dst"))
	}
	w("tcp dport @%s return", SetName(setHealthCheckNodePort, r.f))
	w("ct state new %s reject", in(setIPVSIPs, "dst"))
	r.chain(chainIPVSOutFilter, "")
	for _, o := range outFilters {
		if kernel.FamilyOf(o.Address) != r.f {
			continue
		}
		w("%s saddr %s %s daddr %s %s dport %d drop", r.ip, o.Address, r.ip, o.Address, o.Protocol.Lower(), o.Port)
	}
	r.chain(chainExternalNoLocal, "")
	if local := cfg.nftLocalMatch(r.f); local != "" {
		w("%s return", local)
	}
	w("fib saddr type local return")
	w("drop%s", comment("externalTrafficPolicy=Local and no local endpoint"))
	r.chain(chainClusterIPsCheck, "")
	for _, p := range cfg.ServiceCIDRs {
		if kernel.FamilyOf(p.Addr()) != r.f {
			continue
		}
		w("%s daddr %s %s daddr != @%s reject%s", r.ip, p, r.ip, SetName(setServiceIPs, r.f), comment("unallocated ClusterIP"))
	}
	r.end()
}

// nftLocalMatch is localMatch in nft's words: the match selecting this cluster's pod
// traffic of family f, or "" when the detector cannot tell.
func (c *Config) nftLocalMatch(f kernel.Family) string {
	ip := "ip"
	if f == kernel.IPv6 {
		ip = "ip6"
	}
	switch c.LocalMode {
	case LocalModeNodeCIDR:
		if p := firstOfFamily(c.NodePodCIDRs, f); p.IsValid() {
			return ip + " saddr " + p.String()
		}
		return ""
	case LocalModeBridgeInterface:
		return fmt.Sprintf("iifname %q", c.BridgeInterface)
	case LocalModeInterfaceNamePrefix:
		return fmt.Sprintf("iifname %q", c.InterfaceNamePrefix+"*")
	}
	if p := firstOfFamily(c.ClusterCIDRs, f); p.IsValid() {
		return ip + " saddr " + p.String()
	}
	return ""
}

// negate turns "ip saddr X" / `iifname "x"` into its != form.
func negate(match string) string {
	i := strings.LastIndexByte(match, ' ')
	return match[:i] + " != " + match[i+1:]
}
