package proxier

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Labels kube-proxy filters on.
const (
	// LabelServiceProxyName marks a Service as served by another proxy.
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	// LabelHeadless marks the EndpointSlices of a headless Service.
	LabelHeadless = "service.kubernetes.io/headless"
)

// Skip reports why a Service produces no kernel state, or "" if it is served.
func Skip(cfg *Config, svc *Service) string {
	if name, ok := svc.rare().labels[LabelServiceProxyName]; ok && name != cfg.ServiceProxyName {
		return "served by proxy " + name
	}
	if svc.typ == v1.ServiceTypeExternalName {
		return "ExternalName"
	}
	if svc.clusterIP == v1.ClusterIPNone || svc.clusterIP == "" && len(svc.clusterIPs) == 0 {
		return "headless"
	}
	return ""
}

// Translate computes the desired kernel state of one Service from the Service (the form
// NewService makes) and its EndpointSlices. A nil Service (deleted) or a skipped one
// yields an empty state. It never panics on malformed input: bad parts are skipped and
// listed in Problems.
func Translate(cfg *Config, key ServiceKey, svc *Service, epSlices []*discovery.EndpointSlice) *ServiceState {
	st := &ServiceState{Key: key}
	if svc == nil {
		return st
	}
	if reason := Skip(cfg, svc); reason != "" {
		if _, other := svc.rare().labels[LabelServiceProxyName]; other {
			// Another proxy serves it, but its ClusterIPs are allocated all the same.
			st.normalize(allocatedMembers(svc))
		}
		return st
	}
	t := translator{cfg: cfg, svc: svc, st: st}
	t.run(epSlices)
	st.normalize(append(t.members, allocatedMembers(svc)...))
	return st
}

type translator struct {
	cfg *Config
	svc *Service
	st  *ServiceState
	// members collects the set members; normalize packs them into st.Members.
	members []kernel.Member
	// vs are the settings of every virtual server of the Service.
	vs   kernel.VSSettings
	cips []netip.Addr // the Service's ClusterIPs
	// noRangeOfFamily: families for which loadBalancerSourceRanges lists no range
	// although it lists some.
	noRangeOfFamily []kernel.Family
}

func (t *translator) problem(reason, format string, args ...any) {
	t.st.Problems = append(t.st.Problems, serviceProblem(t.svc, reason, fmt.Sprintf(format, args...)))
}

func (t *translator) run(epSlices []*discovery.EndpointSlice) {
	svc := t.svc
	t.vs.Scheduler, t.vs.Flags = schedulerFor(t.cfg, svc, &t.st.Problems)
	if svc.affinity == v1.ServiceAffinityClientIP {
		t.vs.Flags |= kernel.FlagPersistent
		t.vs.Timeout = DefaultAffinityTimeout
		if c := svc.rare().affinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			if s := *c.ClientIP.TimeoutSeconds; s > 0 && s <= 86400 {
				t.vs.Timeout = uint32(s)
			} else {
				t.problem("InvalidSessionAffinity", "timeoutSeconds %d out of range 1-86400; using %d", s, DefaultAffinityTimeout)
			}
		}
	}
	clusterIPs := t.clusterIPs()
	t.cips = clusterIPs
	eps := collectEndpoints(t.cfg, epSlices, &t.st.Problems)
	type seenKey struct {
		port  int32
		proto v1.Protocol
	}
	seen := map[seenKey]bool{}
	seenNodePort := map[seenKey]bool{}
	for _, sp := range svc.ports {
		proto, ok := kernelProtocol(sp.protocol)
		if !ok {
			t.problem("UnsupportedProtocol", "port %q: protocol %q is not TCP, UDP or SCTP; skipped", sp.name, sp.protocol)
			continue
		}
		if sp.port <= 0 || sp.port > 65535 || sp.nodePort < 0 || sp.nodePort > 65535 {
			t.problem("InvalidPort", "port %q: port %d / nodePort %d out of range; skipped", sp.name, sp.port, sp.nodePort)
			continue
		}
		// A missing protocol is TCP everywhere (the API defaults it; a file may omit
		// it), so "80" and "80/TCP" are the same port.
		protoName := sp.protocol
		if protoName == "" {
			protoName = v1.ProtocolTCP
		}
		k := seenKey{sp.port, protoName}
		if seen[k] {
			t.problem("DuplicatePort", "port %d/%s listed twice; the second is skipped", sp.port, protoName)
			continue
		}
		seen[k] = true
		// Two ports on one NodePort (the API rejects it, a file can hold it) would make
		// one virtual server of two ports, the set entries of both.
		if np := (seenKey{sp.nodePort, protoName}); sp.nodePort > 0 && seenNodePort[np] {
			t.problem("DuplicateNodePort", "port %q: nodePort %d/%s is already another port's; it gets none", sp.name, sp.nodePort, protoName)
			sp.nodePort = 0
		} else if sp.nodePort > 0 {
			seenNodePort[np] = true
		}
		for _, cip := range clusterIPs {
			f := kernel.FamilyOf(cip)
			list := eps[portKey{name: sp.name, proto: protoName, fam: f}]
			t.addPort(sp, proto, cip, list)
		}
	}
	t.addHealthCheck(eps, clusterIPs)
}

// clusterIPs returns the parsed ClusterIPs of families the node serves.
func (t *translator) clusterIPs() []netip.Addr {
	ips := t.svc.clusterIPs
	if len(ips) == 0 {
		ips = []string{t.svc.clusterIP}
	}
	var out []netip.Addr
	for _, s := range ips {
		a, ok := ParseAddr(s)
		if !ok {
			t.problem("InvalidClusterIP", "clusterIP %q is not an IP address; skipped", s)
			continue
		}
		if t.cfg.servesFamily(kernel.FamilyOf(a)) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func kernelProtocol(p v1.Protocol) (kernel.Protocol, bool) {
	switch p {
	case v1.ProtocolTCP, "":
		return kernel.TCP, true
	case v1.ProtocolUDP:
		return kernel.UDP, true
	case v1.ProtocolSCTP:
		return kernel.SCTP, true
	}
	return 0, false
}

// externallyAccessible mirrors kube-proxy's ExternallyAccessible: NodePort, LoadBalancer,
// or any external IP.
func externallyAccessible(svc *Service) bool {
	return svc.typ == v1.ServiceTypeNodePort || svc.typ == v1.ServiceTypeLoadBalancer || len(svc.rare().externalIPs) > 0
}

// portState is one service port in one family, as it is being translated: what its
// virtual servers forward to, and the policy that decides the set members.
type portState struct {
	t     *translator
	f     kernel.Family
	proto kernel.Protocol
	port  uint16
	// internal and external are the real servers of the ClusterIP and of the external
	// frontends (NodePorts, external IPs, LB IPs).
	internal, external RealServerList
	// externalLocal is ETP=Local on an externally accessible Service; noLocal says it has
	// no local endpoint (its outside traffic is dropped).
	externalLocal, noLocal bool
}

// addPort adds everything one service port needs in one family.
func (t *translator) addPort(sp servicePort, proto kernel.Protocol, cip netip.Addr, eps []endpoint) {
	cfg, svc, st, f := t.cfg, t.svc, t.st, kernel.FamilyOf(cip)
	slices.SortFunc(eps, func(a, b endpoint) int { return a.addr.Compare(b.addr) })
	if len(eps) > cfg.MaxEndpoints {
		t.problem("TooManyEndpoints", "port %q has %d endpoints; only the first %d are programmed", sp.name, len(eps), cfg.MaxEndpoints)
	}
	cluster, local := categorize(cfg, eps)
	clusterRS, localRS := realServers(cluster, cfg.MaxEndpoints), realServers(local, cfg.MaxEndpoints)
	ps := &portState{t: t, f: f, proto: proto, port: uint16(sp.port), internal: clusterRS, external: clusterRS}

	// Internal traffic: ClusterIP. ITP=Local uses local endpoints only, and with none the
	// port is rejected like one with no endpoints (kube-proxy's IPVS mode instead falls
	// back to remote endpoints when the Service is external; see README).
	if svc.itp != nil && *svc.itp == v1.ServiceInternalTrafficPolicyLocal {
		ps.internal = localRS
		if len(local) == 0 && len(eps) > 0 {
			st.NoLocalInternal[FamilyIndex(f)] = true
		}
	}
	// External traffic: NodePort, external IPs, LB IPs. ETP=Local uses local endpoints; with
	// none, the virtual servers keep the cluster endpoints for in-cluster clients
	// (kubernetes#93456) and traffic from outside the cluster is dropped by iptables.
	ps.externalLocal = svc.etp == v1.ServiceExternalTrafficPolicyLocal && externallyAccessible(svc)
	if ps.externalLocal {
		if len(local) > 0 {
			ps.external = localRS
		} else if len(eps) > 0 {
			ps.noLocal = true
			st.NoLocalExternal[FamilyIndex(f)] = true
		}
	}

	ps.addVS(cip, ps.port, ps.internal, false)
	ps.bind(cip)
	ps.member(setClusterIP, ps.ipPort(cip))
	ps.addExternalIPs()
	if svc.typ == v1.ServiceTypeLoadBalancer {
		ps.addLoadBalancer()
	}
	if sp.nodePort > 0 && (svc.typ == v1.ServiceTypeNodePort || svc.typ == v1.ServiceTypeLoadBalancer) {
		ps.addNodePort(uint16(sp.nodePort))
	}
	// Hairpin: every local endpoint, whatever its condition (as kube-proxy).
	for _, e := range eps {
		if e.local {
			ps.member(setLoopBack, kernel.SetEntry{IP: e.addr.Addr(), Protocol: proto, Port: e.addr.Port(), IP2: e.addr.Addr()})
		}
	}
}

// member adds e to the family's set named by its IPv4 name.
func (ps *portState) member(set string, e kernel.SetEntry) {
	ps.t.members = append(ps.t.members, kernel.Member{Set: SetName(set, ps.f), Entry: e})
}

// ipPort is the set entry of a on this port.
func (ps *portState) ipPort(a netip.Addr) kernel.SetEntry {
	return kernel.SetEntry{IP: a, Protocol: ps.proto, Port: ps.port}
}

// addVS adds the virtual server addr:p forwarding to rss; ext marks an external frontend
// (subject to the ETP=Local drop).
func (ps *portState) addVS(addr netip.Addr, p uint16, rss RealServerList, ext bool) {
	t, st := ps.t, ps.t.st
	vs := kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: ps.proto, Address: addr, Port: p}, VSSettings: t.vs}
	st.VirtualServers = append(st.VirtualServers, VirtualServerState{VirtualServer: vs, RealServers: rss})
	e := kernel.SetEntry{IP: addr, Protocol: ps.proto, Port: p}
	switch {
	case rss.Empty():
		ps.member(setNoEndpoints, e)
	case ext && ps.noLocal:
		ps.member(setExternalNoLocal, e)
	}
	if ps.proto == kernel.UDP {
		st.UDPFrontends = append(st.UDPFrontends, netip.AddrPortFrom(addr, p))
	}
	// An external or LB IP inside a service CIDR is served like a ClusterIP (kube-proxy
	// serves it); KUBE-CLUSTER-IPS-CHECK must not reject the node's own connections to it.
	if slices.ContainsFunc(t.cfg.ServiceCIDRs, func(c netip.Prefix) bool { return c.Contains(addr) }) {
		ps.member(setServiceIPs, kernel.SetEntry{IP: addr})
	}
}

// markUserChosen marks the virtual server addVS added last as on an address the
// Service's author chose.
func (ps *portState) markUserChosen() {
	vss := ps.t.st.VirtualServers
	vss[len(vss)-1].UserChosen = true
}

// bind puts a on the dummy interface.
func (ps *portState) bind(a netip.Addr) {
	ps.t.st.Bind = append(ps.t.st.Bind, a)
	ps.member(setIPVSIPs, kernel.SetEntry{IP: a})
}

// addExternalIPs adds the Service's external IPs of this family; none, and no problem
// for them, with the AllowServiceExternalIPs gate off (Config.IgnoreExternalIPs).
func (ps *portState) addExternalIPs() {
	t := ps.t
	if t.cfg.IgnoreExternalIPs {
		return
	}
	for _, s := range t.svc.rare().externalIPs {
		a, ok := t.parseFamilyIP(s, ps.f, "InvalidExternalIP")
		if !ok || !t.usableVIP(a, "externalIPs", "InvalidExternalIP") {
			continue
		}
		ps.addVS(a, ps.port, ps.external, true)
		ps.markUserChosen()
		if !slices.Contains(t.cfg.NodeIPs, a) {
			ps.bind(a)
		}
		if ps.externalLocal {
			ps.member(setExternalIPLocal, ps.ipPort(a))
		} else {
			ps.member(setExternalIP, ps.ipPort(a))
		}
	}
}

// addNodePort adds the NodePort np on every NodePort address of this family.
func (ps *portState) addNodePort(np uint16) {
	ips := ps.t.cfg.nodePortIPs(ps.f)
	for _, ip := range ips {
		ps.addVS(ip, np, ps.external, true)
	}
	switch ps.proto {
	case kernel.SCTP:
		for _, ip := range ips {
			e := kernel.SetEntry{IP: ip, Protocol: ps.proto, Port: np}
			ps.member(setNodePortSCTP, e)
			if ps.externalLocal {
				ps.member(setNodePortLocalSCTP, e)
			}
		}
	default:
		set, localSet := setNodePortTCP, setNodePortLocalTCP
		if ps.proto == kernel.UDP {
			set, localSet = setNodePortUDP, setNodePortLocalUDP
		}
		ps.member(set, kernel.SetEntry{Port: np})
		if ps.externalLocal {
			ps.member(localSet, kernel.SetEntry{Port: np})
		}
	}
}

// addLoadBalancer adds the VIP-mode ingress IPs of this family and their firewall entries.
func (ps *portState) addLoadBalancer() {
	t := ps.t
	ranges, filtered := t.sourceRanges(ps.f)
	for _, ing := range t.svc.rare().ingress {
		if ing.IP == "" || ing.IPMode != nil && *ing.IPMode != v1.LoadBalancerIPModeVIP {
			continue // hostname-only or ipMode Proxy: the LB delivers to the pods itself
		}
		a, ok := t.parseFamilyIP(ing.IP, ps.f, "InvalidLoadBalancerIP")
		if !ok || !t.usableVIP(a, "status.loadBalancer.ingress", "InvalidLoadBalancerIP") {
			continue
		}
		ps.addVS(a, ps.port, ps.external, true)
		ps.markUserChosen()
		if !slices.Contains(t.cfg.NodeIPs, a) {
			ps.bind(a)
		}
		e := ps.ipPort(a)
		ps.member(setLoadBalancer, e)
		if ps.externalLocal {
			ps.member(setLoadBalancerLocal, e)
		}
		if !filtered {
			if slices.Contains(t.noRangeOfFamily, ps.f) {
				t.problem("SourceRangesMissingFamily", "loadBalancerSourceRanges has no %s range; %s traffic to %s is not filtered (as kube-proxy does)", ps.f, ps.f, a)
			}
			continue
		}
		ps.member(setLoadBalancerFW, e)
		nodeInside := false
		for _, r := range ranges {
			ps.member(setLoadBalancerSrcCIDR, kernel.SetEntry{IP: a, Protocol: ps.proto, Port: ps.port, Net: r})
			nodeInside = nodeInside || slices.ContainsFunc(t.cfg.primaryIPs(), r.Contains)
		}
		if nodeInside {
			// The node's own traffic to the VIP has the VIP as source.
			ps.member(setLoadBalancerSrcIP, kernel.SetEntry{IP: a, Protocol: ps.proto, Port: ps.port, IP2: a})
		} else {
			t.st.OutFilters = append(t.st.OutFilters, OutFilter{kernel.VSKey{Protocol: ps.proto, Address: a, Port: ps.port}})
		}
	}
}

// sourceRanges returns the loadBalancerSourceRanges of family f and whether traffic of
// family f to the load balancer is filtered at all. As kube-proxy (MapCIDRsByIPFamily),
// the list is split by family first: a /0 of one family opens that family only, and a
// family with no range stays open. A range that does not parse (the API rejects it, a
// file may hold it) keeps both families filtered: it fails closed, never open.
func (t *translator) sourceRanges(f kernel.Family) (ranges []netip.Prefix, filtered bool) {
	listed, invalid, open := false, false, false
	for _, s := range t.svc.rare().sourceRanges {
		if strings.TrimSpace(s) == "" {
			continue
		}
		listed = true
		p, ok := ParsePrefix(s)
		if !ok {
			t.problem("InvalidSourceRange", "loadBalancerSourceRanges %q is not a CIDR; skipped, the firewall stays closed to it", s)
			invalid = true
			continue
		}
		p = p.Masked()
		if kernel.FamilyOf(p.Addr()) != f {
			continue
		}
		if p.Bits() == 0 {
			open = true
		}
		ranges = append(ranges, p)
	}
	switch {
	case open:
		return nil, false
	case len(ranges) > 0 || invalid:
		return outermost(ranges), true
	}
	if listed {
		t.noRangeOfFamily = append(t.noRangeOfFamily, f)
	}
	return nil, false
}

// outermost returns ranges without those inside another (a duplicate included), sorted:
// the union they let in is the same. The nftables backend's source-range set is a
// concatenation with an interval (pipapo), which refuses an element overlapping another
// (10.1.0.0/16 inside 10.0.0.0/8, both API-valid): the whole transaction failed, and
// with it every sync of the node. kube-proxy's nftables mode hands nft an anonymous set,
// which nft merges. Two CIDRs are nested or disjoint, so sorted by address, then widest
// first, a range inside a kept one is inside the last kept one.
func outermost(ranges []netip.Prefix) []netip.Prefix {
	slices.SortFunc(ranges, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	out := ranges[:0]
	for _, r := range ranges {
		if n := len(out); n > 0 && out[n-1].Bits() <= r.Bits() && out[n-1].Contains(r.Addr()) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// usableVIP reports whether a can be an external or load-balancer VIP, and reports a
// Problem when it cannot. Bound to kube-ipvs0, 127.0.0.1:80 would capture the node's own
// localhost, 0.0.0.0 every address; multicast, broadcast and link-local addresses are
// not a Service's to take, and the Service's own ClusterIP is already its VIP.
func (t *translator) usableVIP(a netip.Addr, field, reason string) bool {
	why := specialAddress(a)
	if why == "" && slices.Contains(t.cips, a) {
		why = "the Service's own ClusterIP"
	}
	if why == "" {
		return true
	}
	t.problem(reason, "%s %s is %s; never bound or programmed", field, a, why)
	return false
}

// parseFamilyIP parses s and reports whether it is an address of family f. Unparseable
// addresses are Problems; other families are silently left to that family's pass.
func (t *translator) parseFamilyIP(s string, f kernel.Family, reason string) (netip.Addr, bool) {
	a, ok := ParseAddr(s)
	if !ok {
		t.problem(reason, "%q is not an IP address; skipped", s) // repeats are compacted in normalize
		return netip.Addr{}, false
	}
	return a, kernel.FamilyOf(a) == f
}

// addHealthCheck adds the healthCheckNodePort of an ETP=Local LoadBalancer.
func (t *translator) addHealthCheck(eps map[portKey][]endpoint, clusterIPs []netip.Addr) {
	svc := t.svc
	hc := svc.rare().healthCheckNodePort
	if svc.typ != v1.ServiceTypeLoadBalancer || svc.etp != v1.ServiceExternalTrafficPolicyLocal || hc <= 0 || hc > 65535 {
		return
	}
	local := map[netip.Addr]bool{}
	for _, list := range eps {
		for _, e := range list {
			if e.local && e.ready {
				local[e.addr.Addr()] = true
			}
		}
	}
	port := uint16(hc)
	t.st.HealthCheck = &HealthCheck{Port: port, LocalEndpoints: len(local)}
	for _, ip := range clusterIPs {
		t.members = append(t.members, kernel.Member{Set: SetName(setHealthCheckNodePort, kernel.FamilyOf(ip)), Entry: kernel.SetEntry{Port: port}})
	}
}
