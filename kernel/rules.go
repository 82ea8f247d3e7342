package kernel

import "net/netip"

// Ruleset is the rules of one family in our chains, as data: the iptables-restore
// printer (FormatIptables), the nft printer (FormatNft), the nftables backend's netlink
// encoder and the packet tracer all read it. It holds exactly what our rules use.
type Ruleset struct {
	Family Family
	// Table is the nftables table holding every chain; "" for iptables, whose chains
	// live in the tables their Chain.Table names.
	Table string
	// Chains in the order they are declared. A chain with a Hook is a base chain: for
	// iptables a built-in chain (never declared; we only add rules to it), for nftables
	// a base chain of our table.
	Chains []Chain
	// Rules in order: each chain's rules in the order they run.
	Rules []Rule
}

// Chain is one chain.
type Chain struct {
	Name string
	// Table is the iptables table ("nat", "filter"), which is also a base chain's
	// nftables type.
	Table string
	// Hook is a base chain's netfilter hook; "" for a regular chain.
	Hook Hook
	// Priority is a base chain's priority: nftables', or for iptables its table's at
	// the hook (nat -100, 100 at postrouting; filter 0), which orders the tables' chains
	// for the tracer.
	Priority int32
}

// Hook is a netfilter hook.
type Hook string

// The hooks our base chains use.
const (
	HookPrerouting  Hook = "prerouting"
	HookInput       Hook = "input"
	HookForward     Hook = "forward"
	HookOutput      Hook = "output"
	HookPostrouting Hook = "postrouting"
)

// Rule is one rule: its matches, all of which must hold, in order, then its target.
type Rule struct {
	Table   string
	Chain   string
	Matches []Match
	Target  Target
}

// Match is one condition of a rule: one of the types below.
type Match interface{ isMatch() }

// Comment is the rule's comment (iptables' comment match; nft's rule comment, which
// nft prints last).
type Comment struct{ Text string }

// IP compares the packet's source (Src) or destination address with Addr, or with Net
// when Addr is not valid; Not inverts it.
type IP struct {
	Src  bool
	Not  bool
	Addr netip.Addr
	Net  netip.Prefix
}

// Iface matches the input interface's name, or its start when Prefix.
type Iface struct {
	Not    bool
	Name   string
	Prefix bool
}

// Proto matches the layer 4 protocol.
type Proto struct{ Protocol Protocol }

// DstPort matches the layer 4 destination port.
type DstPort struct{ Port uint16 }

// Field is a part of the packet a set lookup's key is made of.
type Field uint8

// The fields of set keys. A hash:ip,port set's key is an address, L4Proto and DstPort.
const (
	SrcAddr Field = iota
	DstAddr
	L4Proto
	FieldDstPort
)

// Lookup matches when the key built from the packet's fields is in Set (not in it, Not).
type Lookup struct {
	Set string
	Key []Field
	Not bool
}

// CtState matches a connection whose conntrack state is one of States.
type CtState struct{ States CtStates }

// CtStates is a set of conntrack states.
type CtStates uint8

// The conntrack states our rules match.
const (
	CtNew CtStates = 1 << iota
	CtEstablished
	CtRelated
)

// names returns the states of s in the given order, as nft names them.
func (s CtStates) names(order ...CtStates) []string {
	var out []string
	for _, st := range order {
		if s&st != 0 {
			out = append(out, map[CtStates]string{CtNew: "new", CtEstablished: "established", CtRelated: "related"}[st])
		}
	}
	return out
}

// Local matches when the source (Src) or destination address is one of the node's
// (iptables' addrtype LOCAL, nft's fib type local); Not inverts it.
type Local struct {
	Src bool
	Not bool
}

// Mark matches when the packet mark masked with Mask equals Value; Not inverts it.
type Mark struct {
	Mask, Value uint32
	Not         bool
}

// PhysdevIsIn matches a packet that came in on a bridge port; Not inverts it. iptables
// only: nftables has no such match outside the bridge family.
type PhysdevIsIn struct{ Not bool }

// IPVSConn matches the node's packet of an IPVS connection to the virtual server Key.
// iptables only: nftables has no match on IPVS connections.
type IPVSConn struct{ VS VSKey }

func (Comment) isMatch()     {}
func (IP) isMatch()          {}
func (Iface) isMatch()       {}
func (Proto) isMatch()       {}
func (DstPort) isMatch()     {}
func (Lookup) isMatch()      {}
func (CtState) isMatch()     {}
func (Local) isMatch()       {}
func (Mark) isMatch()        {}
func (PhysdevIsIn) isMatch() {}
func (IPVSConn) isMatch()    {}

// Target is what a rule does when its matches hold: a verdict, or a statement after
// which the packet goes on (MarkOr, MarkXor).
type Target struct {
	Kind TargetKind
	// Chain is Jump's chain.
	Chain string
	// Mark is MarkOr's and MarkXor's operand.
	Mark uint32
}

// TargetKind is the kind of a Target.
type TargetKind uint8

// The targets our rules use.
const (
	Accept TargetKind = iota
	Drop
	Return
	// Reject answers ICMP port unreachable, as iptables' REJECT and nft's reject do.
	Reject
	Jump
	Masquerade
	// MasqueradeFully is masquerade with fully random source ports.
	MasqueradeFully
	// MarkOr sets the bits of Mark in the packet mark; MarkXor flips them.
	MarkOr
	MarkXor
)

// language is how a ruleset's backend prints it: whole (String, Fake.Dump, plan) and a
// rule alone (a trace's steps).
type language struct {
	ruleset func(*Ruleset) string
	rule    func(*Ruleset, Rule) string
}

// language is the ruleset's: nft's when it is one nftables table of ours (Table set),
// else iptables'. A third backend's printer adds its case here.
func (r *Ruleset) language() language {
	if r.Table != "" {
		return nftLanguage
	}
	return iptablesLanguage
}

// String prints the ruleset in its backend's language: `nft list table` when it is an
// nftables table, else iptables-restore input.
func (r *Ruleset) String() string {
	if r == nil {
		return ""
	}
	return r.language().ruleset(r)
}

// Chain returns the chain named name in table, if there is one.
func (r *Ruleset) Chain(table, name string) (Chain, bool) {
	for _, c := range r.Chains {
		if c.Name == name && (r.Table != "" || c.Table == table) {
			return c, true
		}
	}
	return Chain{}, false
}

// ChainRules returns the rules of one chain, in order.
func (r *Ruleset) ChainRules(c Chain) []Rule {
	var out []Rule
	for _, rule := range r.Rules {
		if rule.Chain == c.Name && (r.Table != "" || rule.Table == c.Table) {
			out = append(out, rule)
		}
	}
	return out
}
