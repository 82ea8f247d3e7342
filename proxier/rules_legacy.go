package proxier

import (
	"fmt"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The text renderers Rules replaces, kept while the equivalence tests compare their
// output with the printers' and the netlink encoder's.

// RenderIptablesRules renders the iptables rules of one family as iptables-restore input
// holding only our chains, plus "-A <BUILTIN>" jump lines the backend must ensure exist.
// The rule set is fixed for a config except for the KUBE-IPVS-OUT-FILTER lines:
// everything else is driven by ipset membership, so Service churn never rewrites iptables.
func LegacyIptablesText(cfg *Config, f kernel.Family, outFilters []OutFilter) string {
	r := &ruleWriter{f: f, mark: fmt.Sprintf("%#08x", cfg.masqueradeMark())}
	r.nat(cfg)
	r.filter(cfg, outFilters)
	return r.b.String()
}

// ruleWriter accumulates iptables-restore input for one family.
type ruleWriter struct {
	b    strings.Builder
	f    kernel.Family
	mark string // the masquerade mark, as iptables prints it
}

// w writes one line.
func (r *ruleWriter) w(format string, args ...any) { fmt.Fprintf(&r.b, format+"\n", args...) }

// set names the family's set whose IPv4 name is base.
func (r *ruleWriter) set(base string) string { return SetName(base, r.f) }

// table starts the table's section: its header and our chains' declarations.
func (r *ruleWriter) table(name string) {
	r.w("*%s", name)
	for _, c := range RuleChains[name] {
		r.w(":%s - [0:0]", c)
	}
}

// nat writes the nat table: the service portals, masquerade marking and SNAT.
func (r *ruleWriter) nat(cfg *Config) {
	w, set, mark, f := r.w, r.set, r.mark, r.f
	lo := "127.0.0.0/8"
	if f == kernel.IPv6 {
		lo = "::1/128"
	}
	r.table("nat")
	w(`-A PREROUTING -m comment --comment "kubernetes service portals" -j %s`, chainServices)
	w(`-A OUTPUT -m comment --comment "kubernetes service portals" -j %s`, chainServices)
	w(`-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j %s`, chainPostrouting)
	w("-A %s -s %s -j RETURN", chainServices, lo)
	w(`-A %s -m comment --comment "Kubernetes service lb portal" -m set --match-set %s dst,dst -j %s`, chainServices, set(setLoadBalancer), chainLoadBalancer)
	clusterMatch := "dst,dst"
	detect := ""
	switch local := cfg.localMatchText(f); {
	case cfg.MasqueradeAll:
	case local != "":
		detect = " ! " + local
	default:
		// No way to tell pod traffic apart: masquerade node-originated traffic whose
		// source is a VIP, as kube-proxy's no-op local detector does.
		clusterMatch = "src,dst"
	}
	w(`-A %s -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set %s %s%s -j %s`,
		chainServices, set(setClusterIP), clusterMatch, detect, chainMarkMasq)
	w(`-A %s -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set %s dst,dst -j %s`,
		chainServices, set(setExternalIP), chainMarkMasq)
	for _, s := range []string{setExternalIP, setExternalIPLocal} {
		w(`-A %s -m set --match-set %s dst,dst -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT`, chainServices, set(s))
		w(`-A %s -m set --match-set %s dst,dst -m addrtype --dst-type LOCAL -j ACCEPT`, chainServices, set(s))
	}
	w("-A %s -m addrtype --dst-type LOCAL -j %s", chainServices, chainNodePort)
	w("-A %s -m set --match-set %s dst,dst -j ACCEPT", chainServices, set(setClusterIP))
	w("-A %s -m set --match-set %s dst,dst -j ACCEPT", chainServices, set(setLoadBalancer))
	w("-A %s -m set --match-set %s dst,dst -j RETURN", chainLoadBalancer, set(setLoadBalancerLocal))
	w("-A %s -j %s", chainLoadBalancer, chainMarkMasq)
	for _, p := range []struct{ proto, local, all, match string }{
		{"tcp", setNodePortLocalTCP, setNodePortTCP, "dst"},
		{"udp", setNodePortLocalUDP, setNodePortUDP, "dst"},
		{"sctp", setNodePortLocalSCTP, setNodePortSCTP, "dst,dst"},
	} {
		w("-A %s -p %s -m set --match-set %s %s -j RETURN", chainNodePort, p.proto, set(p.local), p.match)
		w("-A %s -p %s -m set --match-set %s %s -j %s", chainNodePort, p.proto, set(p.all), p.match, chainMarkMasq)
	}
	w(`-A %s -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set %s dst,dst,src -j MASQUERADE`,
		chainPostrouting, set(setLoopBack))
	w("-A %s -m mark ! --mark %s/%s -j RETURN", chainPostrouting, mark, mark)
	w("-A %s -j MARK --xor-mark %s", chainPostrouting, mark)
	w(`-A %s -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`, chainPostrouting)
	w("-A %s -j MARK --or-mark %s", chainMarkMasq, mark)
	w("COMMIT")

}

// filter writes the filter table: the firewalls, the VIP access filter, the ETP=Local
// drop and the unallocated-ClusterIP check.
func (r *ruleWriter) filter(cfg *Config, outFilters []OutFilter) {
	w, set, mark, f := r.w, r.set, r.mark, r.f
	r.table("filter")
	w(`-A INPUT -m comment --comment "kubernetes health check rules" -j %s`, chainNodePort)
	w(`-A INPUT -m comment --comment "kube-proxy firewall rules" -j %s`, chainProxyFirewall)
	w(`-A INPUT -m comment --comment "kubernetes ipvs access filter" -j %s`, chainIPVSFilter)
	w(`-A FORWARD -m comment --comment "kube-proxy firewall rules" -j %s`, chainProxyFirewall)
	w(`-A FORWARD -m comment --comment "kubernetes forwarding rules" -j %s`, chainForward)
	w(`-A OUTPUT -m comment --comment "kubernetes ipvs access filter" -j %s`, chainIPVSOutFilter)
	w(`-A FORWARD -m comment --comment "kubernetes unallocated cluster ips" -m conntrack --ctstate NEW -j %s`, chainClusterIPsCheck)
	w(`-A OUTPUT -m comment --comment "kubernetes unallocated cluster ips" -m conntrack --ctstate NEW -j %s`, chainClusterIPsCheck)
	w(`-A %s -m comment --comment "kubernetes forwarding rules" -m mark --mark %s/%s -j ACCEPT`, chainForward, mark, mark)
	w(`-A %s -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`, chainForward)
	w("-A %s -m set --match-set %s dst -j ACCEPT", chainNodePort, set(setHealthCheckNodePort))
	w("-A %s -m set --match-set %s dst,dst -j %s", chainProxyFirewall, set(setLoadBalancerFW), chainSourceRangeFirewall)
	// kubernetes#78994: a Service with no usable endpoint refuses new connections at once.
	w(`-A %s -m comment --comment "service has no endpoints" -m conntrack --ctstate NEW -m set --match-set %s dst,dst -j REJECT`,
		chainProxyFirewall, set(setNoEndpoints))
	w("-A %s -m conntrack --ctstate NEW -m set --match-set %s dst,dst -j %s", chainProxyFirewall, set(setExternalNoLocal), chainExternalNoLocal)
	w("-A %s -m set --match-set %s dst,dst,src -j RETURN", chainSourceRangeFirewall, set(setLoadBalancerSrcCIDR))
	w("-A %s -m set --match-set %s dst,dst,src -j RETURN", chainSourceRangeFirewall, set(setLoadBalancerSrcIP))
	w("-A %s -j DROP", chainSourceRangeFirewall)
	// kubernetes#72236: VIPs accept only service ports, never the node's own listeners.
	for _, s := range []string{setLoadBalancer, setClusterIP, setExternalIP, setExternalIPLocal} {
		w("-A %s -m set --match-set %s dst,dst -j RETURN", chainIPVSFilter, set(s))
	}
	w("-A %s -m set --match-set %s dst -j RETURN", chainIPVSFilter, set(setHealthCheckNodePort))
	w("-A %s -m conntrack --ctstate NEW -m set --match-set %s dst -j REJECT", chainIPVSFilter, set(setIPVSIPs))
	for _, o := range outFilters {
		if kernel.FamilyOf(o.Address) != f {
			continue
		}
		w("-A %s -s %s -m ipvs --vaddr %s --vproto %s --vport %d -j DROP", chainIPVSOutFilter, o.Address, o.Address, o.Protocol.Lower(), o.Port)
	}
	if local := cfg.localMatchText(f); local != "" {
		w("-A %s %s -j RETURN", chainExternalNoLocal, local)
	}
	w("-A %s -m addrtype --src-type LOCAL -j RETURN", chainExternalNoLocal)
	w(`-A %s -m comment --comment "externalTrafficPolicy=Local and no local endpoint" -j DROP`, chainExternalNoLocal)
	renderClusterIPsCheckText(cfg, f, w)
	w("COMMIT")
}

// localMatchText returns the iptables match selecting traffic from this cluster's pods of
// family f, or "" when the detector cannot tell (no CIDR of that family): then, as with
// kube-proxy's no-op detector, nothing counts as pod traffic.
func (c *Config) localMatchText(f kernel.Family) string {
	switch c.LocalMode {
	case LocalModeNodeCIDR:
		if p := firstOfFamily(c.NodePodCIDRs, f); p.IsValid() {
			return "-s " + p.String()
		}
		return ""
	case LocalModeBridgeInterface:
		return "-i " + c.BridgeInterface
	case LocalModeInterfaceNamePrefix:
		return "-i " + c.InterfaceNamePrefix + "+"
	}
	if p := firstOfFamily(c.ClusterCIDRs, f); p.IsValid() {
		return "-s " + p.String()
	}
	return ""
}

// renderClusterIPsCheckText writes the check's rules for family f: one REJECT per service
// CIDR of the family, for new connections to an address no Service holds.
func renderClusterIPsCheckText(cfg *Config, f kernel.Family, w func(format string, args ...any)) {
	for _, p := range cfg.ServiceCIDRs {
		if kernel.FamilyOf(p.Addr()) != f {
			continue
		}
		w(`-A %s -d %s -m set ! --match-set %s dst -m comment --comment "unallocated ClusterIP" -j REJECT`,
			chainClusterIPsCheck, p, SetName(setServiceIPs, f))
	}
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
func LegacyNftText(cfg *Config, f kernel.Family, outFilters []OutFilter) string {
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
func commentText(s string) string { return fmt.Sprintf(" comment %q", s) }

// base writes the base chains: the hooks, each jumping to the chains iptables' built-in
// chains jump to.
func (r *nftWriter) base(cfg *Config) {
	portals := commentText("kubernetes service portals")
	r.chain(nftNatPrerouting, "type nat hook prerouting priority dstnat")
	r.w("jump %s%s", chainServices, portals)
	r.chain(nftNatOutput, "type nat hook output priority -100")
	r.w("jump %s%s", chainServices, portals)
	r.chain(nftNatPostrouting, "type nat hook postrouting priority srcnat")
	r.w("jump %s%s", chainPostrouting, commentText("kubernetes postrouting rules"))
	firewall := commentText("kube-proxy firewall rules")
	unallocated := commentText("kubernetes unallocated cluster ips")
	r.chain(nftFilterInput, "type filter hook input priority filter")
	r.w("jump %s%s", chainFilterNodePort, commentText("kubernetes health check rules"))
	r.w("jump %s%s", chainProxyFirewall, firewall)
	r.w("jump %s%s", chainIPVSFilter, commentText("kubernetes ipvs access filter"))
	r.chain(nftFilterForward, "type filter hook forward priority filter")
	r.w("jump %s%s", chainProxyFirewall, firewall)
	r.w("jump %s%s", chainForward, commentText("kubernetes forwarding rules"))
	r.w("ct state new jump %s%s", chainClusterIPsCheck, unallocated)
	r.chain(nftFilterOutput, "type filter hook output priority filter")
	r.w("ct state new jump %s%s", chainClusterIPsCheck, unallocated)
	r.chain(nftFilterOutputPreIPVS, "type filter hook output priority mangle")
	r.w("jump %s%s", chainIPVSOutFilter, commentText("kubernetes ipvs access filter"))
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
	w("%s jump %s%s", in(setLoadBalancer, "dst,dst"), chainLoadBalancer, commentText("Kubernetes service lb portal"))
	clusterDirs, detect := "dst,dst", ""
	switch local := cfg.nftLocalMatch(r.f); {
	case cfg.MasqueradeAll:
	case local != "":
		detect = " " + negateText(local)
	default:
		clusterDirs = "src,dst" // as the iptables backend: no way to tell pod traffic apart
	}
	w("%s%s jump %s%s", in(setClusterIP, clusterDirs), detect, chainMarkMasq,
		commentText("Kubernetes service cluster ip + port for masquerade purpose"))
	w("%s jump %s%s", in(setExternalIP, "dst,dst"), chainMarkMasq,
		commentText("Kubernetes service external ip + port for masquerade and filter purpose"))
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
		commentText("Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"))
	w("meta mark & %s != %s return", r.mark, r.mark)
	w("meta mark set meta mark ^ %s", r.mark)
	w("masquerade fully-random%s", commentText("kubernetes service traffic requiring SNAT"))
	r.chain(chainMarkMasq, "")
	w("meta mark set meta mark | %s", r.mark)
}

// filter writes the filter chains: the firewalls, the VIP access filter, the ETP=Local
// drop and the unallocated-ClusterIP check.
func (r *nftWriter) filter(cfg *Config, outFilters []OutFilter) {
	w, in := r.w, r.in
	r.chain(chainForward, "")
	w("meta mark & %s == %s accept%s", r.mark, r.mark, commentText("kubernetes forwarding rules"))
	w("ct state established,related accept%s", commentText("kubernetes forwarding conntrack rule"))
	r.chain(chainFilterNodePort, "")
	w("tcp dport @%s accept", SetName(setHealthCheckNodePort, r.f))
	r.chain(chainProxyFirewall, "")
	w("%s jump %s", in(setLoadBalancerFW, "dst,dst"), chainSourceRangeFirewall)
	// kubernetes#78994: a Service with no usable endpoint refuses new connections at once.
	w("ct state new %s reject%s", in(setNoEndpoints, "dst,dst"), commentText("service has no endpoints"))
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
	w("drop%s", commentText("externalTrafficPolicy=Local and no local endpoint"))
	r.chain(chainClusterIPsCheck, "")
	for _, p := range cfg.ServiceCIDRs {
		if kernel.FamilyOf(p.Addr()) != r.f {
			continue
		}
		w("%s daddr %s %s daddr != @%s reject%s", r.ip, p, r.ip, SetName(setServiceIPs, r.f), commentText("unallocated ClusterIP"))
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
func negateText(match string) string {
	i := strings.LastIndexByte(match, ' ')
	return match[:i] + " != " + match[i+1:]
}
