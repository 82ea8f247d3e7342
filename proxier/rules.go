package proxier

import (
	"net/netip"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Rules builds the fixed rules of family f for the configured backend. The rule set is
// fixed for a config except for the KUBE-IPVS-OUT-FILTER rules: everything else is
// driven by set membership, so Service churn never rewrites rules.
//
// Every backend gets the same rules in the same chains, with the same sets; the
// nftables table differs where nft has no equivalent (its RulesBackend says so):
//   - it has base chains of its own (nftBaseChains) in place of rules in iptables'
//     built-in chains, and the filter table's KUBE-NODE-PORT is KUBE-NODE-PORT-FILTER;
//   - `-m physdev ! --physdev-is-in` has no nftables match outside the bridge family.
//     The rule holding it only ends the nat walk early for traffic already marked, and
//     the rule after it accepts every external IP that is local, so it is left out:
//     nothing reaches a different verdict;
//   - the out filter runs before IPVS (nftFilterOutputPreIPVS) and matches the VIP as
//     destination, instead of `-m ipvs --vaddr` after it;
//   - a port set's lookup is bound to TCP (the health check ports) or loses the
//     protocol match its key already holds (SCTP NodePorts).
func Rules(cfg *Config, f kernel.Family, outFilters []OutFilter) *kernel.Ruleset {
	be := cfg.rulesBackend()
	b := &rulesBuilder{cfg: cfg, f: f, be: be, mark: cfg.masqueradeMark()}
	b.rs.Family, b.rs.Table, b.rs.Chains = f, be.Table, be.chains()
	b.nat()
	b.filter(outFilters)
	return &b.rs
}

// iptablesChains is the chains of the iptables backend: the built-in ones we add rules
// to (with their tables' priorities: nat -100 and 100, filter 0), then ours in
// RuleChains' order.
func iptablesChains() []kernel.Chain {
	out := []kernel.Chain{
		{Name: "PREROUTING", Table: "nat", Hook: kernel.HookPrerouting, Priority: -100},
		{Name: "OUTPUT", Table: "nat", Hook: kernel.HookOutput, Priority: -100},
		{Name: "POSTROUTING", Table: "nat", Hook: kernel.HookPostrouting, Priority: 100},
	}
	for _, table := range []string{"nat", "filter"} {
		if table == "filter" {
			out = append(out,
				kernel.Chain{Name: "INPUT", Table: "filter", Hook: kernel.HookInput},
				kernel.Chain{Name: "FORWARD", Table: "filter", Hook: kernel.HookForward},
				kernel.Chain{Name: "OUTPUT", Table: "filter", Hook: kernel.HookOutput})
		}
		for _, c := range RuleChains[table] {
			out = append(out, kernel.Chain{Name: c, Table: table})
		}
	}
	return out
}

// rulesBuilder accumulates one family's ruleset.
type rulesBuilder struct {
	rs   kernel.Ruleset
	cfg  *Config
	f    kernel.Family
	be   *RulesBackend
	mark uint32
}

// The keys of our set lookups, named by ipset's directions: "dst,dst" is address .
// protocol . port (hash:ip,port), "src,dst" takes the address from the source,
// "dst,dst,src" adds the source address (hash:ip,port,ip and hash:ip,port,net), "dst"
// the destination address (hash:ip), and port the destination port (bitmap:port).
var (
	keyDstDst    = []kernel.Field{kernel.DstAddr, kernel.L4Proto, kernel.FieldDstPort}
	keySrcDst    = []kernel.Field{kernel.SrcAddr, kernel.L4Proto, kernel.FieldDstPort}
	keyDstDstSrc = []kernel.Field{kernel.DstAddr, kernel.L4Proto, kernel.FieldDstPort, kernel.SrcAddr}
	keyDst       = []kernel.Field{kernel.DstAddr}
	keyPort      = []kernel.Field{kernel.FieldDstPort}
)

// add appends a rule to chain of table.
func (b *rulesBuilder) add(table, chain string, t kernel.Target, m ...kernel.Match) {
	b.rs.Rules = append(b.rs.Rules, kernel.Rule{Table: table, Chain: chain, Matches: m, Target: t})
}

// in is a lookup of the family's set base with key.
func (b *rulesBuilder) in(base string, key []kernel.Field) kernel.Lookup {
	return kernel.Lookup{Set: SetName(base, b.f), Key: key}
}

// base is the chain where rules of table at hook h go: the backend's first base chain
// of that table and hook (iptables' built-in chain, or our table's own).
func (b *rulesBuilder) base(table string, h kernel.Hook) string {
	for _, c := range b.rs.Chains {
		if c.Table == table && c.Hook == h {
			return c.Name
		}
	}
	panic("rules: no base chain for " + table + " " + string(h))
}

// The targets.
var (
	accept = kernel.Target{Kind: kernel.Accept}
	drop   = kernel.Target{Kind: kernel.Drop}
	ret    = kernel.Target{Kind: kernel.Return}
	reject = kernel.Target{Kind: kernel.Reject}
)

func jump(chain string) kernel.Target { return kernel.Target{Kind: kernel.Jump, Chain: chain} }

func comment(s string) kernel.Comment { return kernel.Comment{Text: s} }

// nat adds the nat chains' rules: the service portals, masquerade marking and SNAT.
func (b *rulesBuilder) nat() {
	const nat = "nat"
	add, in := b.add, b.in
	portals := comment("kubernetes service portals")
	add(nat, b.base(nat, kernel.HookPrerouting), jump(chainServices), portals)
	add(nat, b.base(nat, kernel.HookOutput), jump(chainServices), portals)
	add(nat, b.base(nat, kernel.HookPostrouting), jump(chainPostrouting), comment("kubernetes postrouting rules"))
	lo := netip.MustParsePrefix("127.0.0.0/8")
	if b.f == kernel.IPv6 {
		lo = netip.MustParsePrefix("::1/128")
	}
	add(nat, chainServices, ret, kernel.IP{Src: true, Net: lo})
	add(nat, chainServices, jump(chainLoadBalancer), comment("Kubernetes service lb portal"), in(setLoadBalancer, keyDstDst))
	clusterKey := keyDstDst
	cluster := []kernel.Match{comment("Kubernetes service cluster ip + port for masquerade purpose"), nil}
	switch local, ok := b.cfg.localMatch(b.f); {
	case b.cfg.MasqueradeAll:
	case ok:
		cluster = append(cluster, negate(local))
	default:
		// No way to tell pod traffic apart: masquerade node-originated traffic whose
		// source is a VIP, as kube-proxy's no-op local detector does.
		clusterKey = keySrcDst
	}
	cluster[1] = in(setClusterIP, clusterKey)
	add(nat, chainServices, jump(chainMarkMasq), cluster...)
	add(nat, chainServices, jump(chainMarkMasq),
		comment("Kubernetes service external ip + port for masquerade and filter purpose"), in(setExternalIP, keyDstDst))
	for _, s := range []string{setExternalIP, setExternalIPLocal} {
		if b.be.xtables {
			add(nat, chainServices, accept, in(s, keyDstDst), kernel.PhysdevIsIn{Not: true}, kernel.Local{Src: true, Not: true})
		}
		add(nat, chainServices, accept, in(s, keyDstDst), kernel.Local{})
	}
	add(nat, chainServices, jump(chainNodePort), kernel.Local{})
	add(nat, chainServices, accept, in(setClusterIP, keyDstDst))
	add(nat, chainServices, accept, in(setLoadBalancer, keyDstDst))
	add(nat, chainLoadBalancer, ret, in(setLoadBalancerLocal, keyDstDst))
	add(nat, chainLoadBalancer, jump(chainMarkMasq))
	for _, p := range []struct {
		proto      kernel.Protocol
		local, all string
	}{
		{kernel.TCP, setNodePortLocalTCP, setNodePortTCP},
		{kernel.UDP, setNodePortLocalUDP, setNodePortUDP},
	} {
		add(nat, chainNodePort, ret, kernel.Proto{Protocol: p.proto}, in(p.local, keyPort))
		add(nat, chainNodePort, jump(chainMarkMasq), kernel.Proto{Protocol: p.proto}, in(p.all, keyPort))
	}
	sctp := []kernel.Match{kernel.Proto{Protocol: kernel.SCTP}}
	if !b.be.xtables {
		sctp = nil // the key holds the protocol
	}
	add(nat, chainNodePort, ret, append(sctp, in(setNodePortLocalSCTP, keyDstDst))...)
	add(nat, chainNodePort, jump(chainMarkMasq), append(sctp, in(setNodePortSCTP, keyDstDst))...)
	add(nat, chainPostrouting, kernel.Target{Kind: kernel.Masquerade},
		comment("Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"), in(setLoopBack, keyDstDstSrc))
	add(nat, chainPostrouting, ret, kernel.Mark{Mask: b.mark, Value: b.mark, Not: true})
	add(nat, chainPostrouting, kernel.Target{Kind: kernel.MarkXor, Mark: b.mark})
	add(nat, chainPostrouting, kernel.Target{Kind: kernel.MasqueradeFully}, comment("kubernetes service traffic requiring SNAT"))
	add(nat, chainMarkMasq, kernel.Target{Kind: kernel.MarkOr, Mark: b.mark})
}

// filter adds the filter chains' rules: the firewalls, the VIP access filter, the
// ETP=Local drop and the unallocated-ClusterIP check.
func (b *rulesBuilder) filter(outFilters []OutFilter) {
	const filter = "filter"
	add, in := b.add, b.in
	nodePort, hcPort := b.be.filterNodePort, []kernel.Match{in(setHealthCheckNodePort, keyPort)}
	if !b.be.xtables {
		hcPort = append([]kernel.Match{kernel.Proto{Protocol: kernel.TCP}}, hcPort...)
	}
	input, forward, output := b.base(filter, kernel.HookInput), b.base(filter, kernel.HookForward), b.base(filter, kernel.HookOutput)
	firewall, unallocated := comment("kube-proxy firewall rules"), comment("kubernetes unallocated cluster ips")
	isNew := kernel.CtState{States: kernel.CtNew}
	add(filter, input, jump(nodePort), comment("kubernetes health check rules"))
	add(filter, input, jump(chainProxyFirewall), firewall)
	add(filter, input, jump(chainIPVSFilter), comment("kubernetes ipvs access filter"))
	add(filter, forward, jump(chainProxyFirewall), firewall)
	add(filter, forward, jump(chainForward), comment("kubernetes forwarding rules"))
	add(filter, b.be.outFilter, jump(chainIPVSOutFilter), comment("kubernetes ipvs access filter"))
	add(filter, forward, jump(chainClusterIPsCheck), unallocated, isNew)
	add(filter, output, jump(chainClusterIPsCheck), unallocated, isNew)
	add(filter, chainForward, accept, comment("kubernetes forwarding rules"), kernel.Mark{Mask: b.mark, Value: b.mark})
	add(filter, chainForward, accept, comment("kubernetes forwarding conntrack rule"),
		kernel.CtState{States: kernel.CtRelated | kernel.CtEstablished})
	add(filter, nodePort, accept, hcPort...)
	add(filter, chainProxyFirewall, jump(chainSourceRangeFirewall), in(setLoadBalancerFW, keyDstDst))
	// kubernetes#78994: a Service with no usable endpoint refuses new connections at once.
	add(filter, chainProxyFirewall, reject, comment("service has no endpoints"), isNew, in(setNoEndpoints, keyDstDst))
	add(filter, chainProxyFirewall, jump(chainExternalNoLocal), isNew, in(setExternalNoLocal, keyDstDst))
	add(filter, chainSourceRangeFirewall, ret, in(setLoadBalancerSrcCIDR, keyDstDstSrc))
	add(filter, chainSourceRangeFirewall, ret, in(setLoadBalancerSrcIP, keyDstDstSrc))
	add(filter, chainSourceRangeFirewall, drop)
	// kubernetes#72236: VIPs accept only service ports, never the node's own listeners.
	for _, s := range []string{setLoadBalancer, setClusterIP, setExternalIP, setExternalIPLocal} {
		add(filter, chainIPVSFilter, ret, in(s, keyDstDst))
	}
	add(filter, chainIPVSFilter, ret, hcPort...)
	add(filter, chainIPVSFilter, reject, isNew, in(setIPVSIPs, keyDst))
	for _, o := range outFilters {
		if kernel.FamilyOf(o.Address) != b.f {
			continue
		}
		if !b.be.xtables {
			add(filter, chainIPVSOutFilter, drop, kernel.IP{Src: true, Addr: o.Address}, kernel.IP{Addr: o.Address},
				kernel.Proto{Protocol: o.Protocol}, kernel.DstPort{Port: o.Port})
		} else {
			add(filter, chainIPVSOutFilter, drop, kernel.IP{Src: true, Addr: o.Address}, kernel.IPVSConn{VS: o.VSKey})
		}
	}
	if local, ok := b.cfg.localMatch(b.f); ok {
		add(filter, chainExternalNoLocal, ret, local)
	}
	add(filter, chainExternalNoLocal, ret, kernel.Local{Src: true})
	add(filter, chainExternalNoLocal, drop, comment("externalTrafficPolicy=Local and no local endpoint"))
	b.clusterIPsCheck()
}

// negate inverts a local-traffic match.
func negate(m kernel.Match) kernel.Match {
	switch m := m.(type) {
	case kernel.IP:
		m.Not = !m.Not
		return m
	case kernel.Iface:
		m.Not = !m.Not
		return m
	}
	panic("negate: not a local-traffic match")
}
