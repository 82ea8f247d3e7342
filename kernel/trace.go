package kernel

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
)

// Packet is a new connection's first packet, for Trace.
type Packet struct {
	Src, Dst netip.Addr
	Protocol Protocol
	Port     uint16
	// In is the interface it arrives on; "" for the node's own traffic.
	In string
}

func (p Packet) String() string {
	from := p.In
	if from == "" {
		from = "node"
	}
	return fmt.Sprintf("%s %s -> %s via %s", p.Protocol, p.Src, netip.AddrPortFrom(p.Dst, p.Port), from)
}

// Outcome is what becomes of a traced packet.
type Outcome string

// The outcomes.
const (
	// ToRealServers: IPVS forwards it to one of RealServers.
	ToRealServers Outcome = "ipvs"
	// ToHost: a local listener gets it.
	ToHost Outcome = "host"
	// Forwarded: routed on (the node's own: sent out), not to a service.
	Forwarded Outcome = "forward"
	Rejected  Outcome = "reject"
	Dropped   Outcome = "drop"
)

// Verdict is a traced packet's fate.
type Verdict struct {
	Outcome Outcome
	// RealServers are where IPVS may send it ("ip:port", sorted), with Masquerade when
	// its source is NATed on the way.
	RealServers []string
	Masquerade  bool
	// Steps are the rules that matched, in order ("table chain #n: rule"), and where
	// IPVS took the packet ("ipvs LOCAL_IN|LOCAL_OUT VS: real servers ...").
	Steps []string
}

func (v Verdict) String() string {
	s := string(v.Outcome)
	if v.Outcome == ToRealServers {
		s += " " + strings.Join(v.RealServers, ",")
		if v.Masquerade {
			s += " masq"
		}
	}
	return s
}

// traceState is what the tracer reads: the rules, the sets, the IPVS table and the
// node's addresses, of one family.
type traceState struct {
	rules *Ruleset
	// in reports whether the set holds the entry built from the packet for key.
	in    func(set string, key []Field, src, dst netip.Addr, proto Protocol, port uint16) bool
	vs    map[VSKey][]string // real servers of weight > 0, "ip:port", sorted
	local map[netip.Addr]bool
}

// tracing is a packet on its way.
type tracing struct {
	st   *traceState
	p    Packet
	mark uint32
	masq bool
	dst  netip.Addr // rewritten by IPVS
	port uint16
	// conn is the virtual server whose connection IPVS made for the packet, once it has.
	conn  *VSKey
	steps []string
}

// ipvsLocalOut is the priority of IPVS's hook at LOCAL_OUT (ip_vs_local_request4,
// NF_IP_PRI_NAT_DST + 2): OUTPUT's base chains below it see the node's own packet
// addressed to the virtual server, those above it addressed to the real server.
const ipvsLocalOut = -98

// trace runs p through the hooks an IPVS service packet meets, as kube-proxy's IPVS
// mode relies on them. A packet that arrives: PREROUTING, the routing decision (an
// address of the node is local), INPUT (FORWARD for a packet routed on), then IPVS at
// LOCAL_IN, then POSTROUTING towards the real server. The node's own packet: OUTPUT,
// where IPVS takes a connection to a virtual server between the base chains
// (ipvsLocalOut), then POSTROUTING towards the real server; else INPUT for a local
// address, or out. At each hook the base chains run in priority order. Connections are
// new (ctstate NEW) and never arrive on a bridge port.
func (st *traceState) trace(p Packet) Verdict {
	t := &tracing{st: st, p: p, dst: p.Dst, port: p.Port}
	if p.In == "" {
		return t.own()
	}
	if o := t.hook(HookPrerouting, math.MinInt32, math.MaxInt32); o != "" {
		return t.end(o)
	}
	if !st.local[p.Dst] {
		if o := t.hook(HookForward, math.MinInt32, math.MaxInt32); o != "" {
			return t.end(o)
		}
		return t.end(Forwarded)
	}
	if o := t.hook(HookInput, math.MinInt32, math.MaxInt32); o != "" {
		return t.end(o)
	}
	if !t.ipvs("LOCAL_IN") {
		return t.end(ToHost)
	}
	return t.toRealServer()
}

// own runs the node's own packet: OUTPUT, IPVS inside it, then POSTROUTING or INPUT.
func (t *tracing) own() Verdict {
	if o := t.hook(HookOutput, math.MinInt32, ipvsLocalOut); o != "" {
		return t.end(o)
	}
	taken := t.ipvs("LOCAL_OUT")
	if o := t.hook(HookOutput, ipvsLocalOut, math.MaxInt32); o != "" {
		return t.end(o)
	}
	if taken {
		return t.toRealServer()
	}
	if !t.st.local[t.p.Dst] {
		return t.end(Forwarded)
	}
	if o := t.hook(HookInput, math.MinInt32, math.MaxInt32); o != "" {
		return t.end(o)
	}
	return t.end(ToHost)
}

// ipvs is IPVS's hook at LOCAL_IN or LOCAL_OUT: a packet to a virtual server is
// readdressed to its first real server (the one a hairpin test needs); true when a
// virtual server took it.
func (t *tracing) ipvs(at string) bool {
	k := VSKey{Protocol: t.p.Protocol, Address: t.p.Dst, Port: t.p.Port}
	rss, ok := t.st.vs[k]
	if !ok {
		return false
	}
	t.conn = &k
	t.steps = append(t.steps, fmt.Sprintf("ipvs %s %s: real servers %s", at, k, strings.Join(rss, ",")))
	if len(rss) > 0 {
		rs := netip.MustParseAddrPort(rss[0])
		t.dst, t.port = rs.Addr(), rs.Port()
	}
	return true
}

// toRealServer is the way on from IPVS: POSTROUTING, then a real server. A virtual
// server with no real server loses the SYN.
func (t *tracing) toRealServer() Verdict {
	rss := t.st.vs[*t.conn]
	if len(rss) == 0 {
		return t.end(Dropped)
	}
	if o := t.hook(HookPostrouting, math.MinInt32, math.MaxInt32); o != "" {
		return t.end(o)
	}
	return Verdict{Outcome: ToRealServers, RealServers: rss, Masquerade: t.masq, Steps: t.steps}
}

func (t *tracing) end(o Outcome) Verdict { return Verdict{Outcome: o, Steps: t.steps} }

// hook runs the base chains of h whose priority is in [from, to), in priority order;
// "" lets the packet go on.
func (t *tracing) hook(h Hook, from, to int32) Outcome {
	var base []Chain
	for _, c := range t.st.rules.Chains {
		if c.Hook == h && c.Priority >= from && c.Priority < to {
			base = append(base, c)
		}
	}
	slices.SortStableFunc(base, func(a, b Chain) int { return cmp.Compare(a.Priority, b.Priority) })
	for _, c := range base {
		switch v := t.chain(c, 0); v {
		case "", "accept", "return":
		default:
			return Outcome(v)
		}
	}
	return ""
}

// chain runs one chain: "" when the packet falls off its end or returns, else the
// verdict ("accept" ends the hook's chain, not the packet's way).
func (t *tracing) chain(c Chain, depth int) string {
	if depth > 8 {
		t.steps = append(t.steps, fmt.Sprintf("%s %s: jumps nest too deep, dropped", c.Table, c.Name))
		return string(Dropped) // a loop: never in our rules, and refused by both kernels
	}
	for i, r := range t.st.rules.ChainRules(c) {
		if !t.matches(r) {
			continue
		}
		t.steps = append(t.steps, fmt.Sprintf("%s %s #%d: %s", c.Table, c.Name, i+1, t.st.rules.language().rule(t.st.rules, r)))
		switch r.Target.Kind {
		case Return:
			return ""
		case Accept:
			return "accept"
		case Drop:
			return string(Dropped)
		case Reject:
			return string(Rejected)
		case Masquerade, MasqueradeFully:
			t.masq = true
			return "accept"
		case MarkOr:
			t.mark |= r.Target.Mark
		case MarkXor:
			t.mark ^= r.Target.Mark
		case Jump:
			next, ok := t.st.rules.Chain(r.Table, r.Target.Chain)
			if !ok {
				t.steps = append(t.steps, fmt.Sprintf("%s %s: no such chain, dropped", r.Table, r.Target.Chain))
				return string(Dropped)
			}
			if v := t.chain(next, depth+1); v != "" {
				return v
			}
		}
	}
	return ""
}

// matches evaluates a rule's matches.
func (t *tracing) matches(r Rule) bool {
	p := t.p
	for _, m := range r.Matches {
		var ok bool
		switch m := m.(type) {
		case Comment:
			ok = true
		case IP:
			a := t.dst
			if m.Src {
				a = p.Src
			}
			if m.Addr.IsValid() {
				ok = a == m.Addr
			} else {
				ok = m.Net.Contains(a)
			}
			ok = ok != m.Not
		case Iface:
			ok = p.In != "" && (p.In == m.Name || m.Prefix && strings.HasPrefix(p.In, m.Name))
			ok = ok != m.Not
		case Proto:
			ok = p.Protocol == m.Protocol
		case DstPort:
			ok = t.port == m.Port
		case Lookup:
			ok = t.st.in(m.Set, m.Key, p.Src, t.dst, p.Protocol, t.port) != m.Not
		case CtState:
			ok = m.States&CtNew != 0
		case Local:
			if m.Src {
				ok = p.In == "" || t.st.local[p.Src]
			} else {
				ok = t.st.local[t.dst]
			}
			ok = ok != m.Not
		case Mark:
			ok = (t.mark&m.Mask == m.Value) != m.Not
		case PhysdevIsIn:
			ok = m.Not
		case IPVSConn:
			ok = t.conn != nil && *t.conn == m.VS
		}
		if !ok {
			return false
		}
	}
	return true
}
