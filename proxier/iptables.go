package proxier

import (
	"fmt"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Chains ipvs-proxier owns. The first group carries kube-proxy's names, so a node taken
// over from kube-proxy's IPVS mode keeps the same chains (pkg/proxy/ipvs/proxier.go).
const (
	chainServices            = "KUBE-SERVICES"
	chainPostrouting         = "KUBE-POSTROUTING"
	chainMarkMasq            = "KUBE-MARK-MASQ"
	chainNodePort            = "KUBE-NODE-PORT"
	chainLoadBalancer        = "KUBE-LOAD-BALANCER"
	chainForward             = "KUBE-FORWARD"
	chainProxyFirewall       = "KUBE-PROXY-FIREWALL"
	chainSourceRangeFirewall = "KUBE-SOURCE-RANGES-FIREWALL"
	chainIPVSFilter          = "KUBE-IPVS-FILTER"
	chainIPVSOutFilter       = "KUBE-IPVS-OUT-FILTER"
	// chainExternalNoLocal drops traffic from outside the cluster to ETP=Local services
	// with no local endpoint; kube-proxy's IPVS mode forwards it to remote pods instead.
	chainExternalNoLocal = "KUBE-EXTERNAL-NO-LOCAL"
)

// RuleChains lists our chains per table, in the order they are declared.
var RuleChains = map[string][]string{
	"nat": {chainServices, chainPostrouting, chainNodePort, chainLoadBalancer, chainMarkMasq},
	"filter": {chainForward, chainNodePort, chainProxyFirewall, chainSourceRangeFirewall, chainIPVSFilter, chainIPVSOutFilter, chainExternalNoLocal,
		chainClusterIPsCheck},
}

// RenderIptablesRules renders the iptables rules of one family as iptables-restore input
// holding only our chains, plus "-A <BUILTIN>" jump lines the backend must ensure exist.
// The rule set is fixed for a config except for the KUBE-IPVS-OUT-FILTER lines:
// everything else is driven by ipset membership, so Service churn never rewrites iptables.
func RenderIptablesRules(cfg *Config, f kernel.Family, outFilters []OutFilter) string {
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
	switch local := cfg.localMatch(f); {
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
	if local := cfg.localMatch(f); local != "" {
		w("-A %s %s -j RETURN", chainExternalNoLocal, local)
	}
	w("-A %s -m addrtype --src-type LOCAL -j RETURN", chainExternalNoLocal)
	w(`-A %s -m comment --comment "externalTrafficPolicy=Local and no local endpoint" -j DROP`, chainExternalNoLocal)
	renderClusterIPsCheck(cfg, f, w)
	w("COMMIT")
}
