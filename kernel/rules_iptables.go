package kernel

import (
	"fmt"
	"slices"
	"strings"
)

// iptablesLanguage is iptables-restore input: the whole ruleset, and a rule as its "-A"
// line without the chain.
var iptablesLanguage = language{
	ruleset: (*Ruleset).Iptables,
	rule: func(_ *Ruleset, rule Rule) string {
		return strings.TrimPrefix(iptablesRule(rule), "-A "+rule.Chain+" ")
	},
}

// Iptables prints the ruleset as iptables-restore input: per table, our chains'
// declarations and then every rule ("-A CHAIN ..."), rules of built-in chains included.
func (r *Ruleset) Iptables() string {
	var b strings.Builder
	var tables []string
	for _, c := range r.Chains {
		if !slices.Contains(tables, c.Table) {
			tables = append(tables, c.Table)
		}
	}
	for _, t := range tables {
		b.WriteString("*" + t + "\n")
		for _, c := range r.Chains {
			if c.Table == t && c.Hook == "" {
				fmt.Fprintf(&b, ":%s - [0:0]\n", c.Name)
			}
		}
		for _, rule := range r.Rules {
			if rule.Table == t {
				b.WriteString(iptablesRule(rule) + "\n")
			}
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}

// iptablesRule prints one rule as an "-A" line.
func iptablesRule(rule Rule) string {
	parts := []string{"-A " + rule.Chain}
	for _, m := range rule.Matches {
		parts = append(parts, iptablesMatch(m))
	}
	return strings.Join(append(parts, iptablesTarget(rule.Target)), " ")
}

// not is iptables' negation prefix.
func not(neg bool) string {
	if neg {
		return "! "
	}
	return ""
}

// iptablesMatch prints one match.
func iptablesMatch(m Match) string {
	switch m := m.(type) {
	case Comment:
		return `-m comment --comment "` + m.Text + `"`
	case IP:
		opt := "-d "
		if m.Src {
			opt = "-s "
		}
		v := m.Net.String()
		if m.Addr.IsValid() {
			v = m.Addr.String()
		}
		return not(m.Not) + opt + v
	case Iface:
		name := m.Name
		if m.Prefix {
			name += "+"
		}
		return not(m.Not) + "-i " + name
	case Proto:
		return "-p " + m.Protocol.Lower()
	case DstPort:
		return fmt.Sprintf("--dport %d", m.Port)
	case Lookup:
		return "-m set " + not(m.Not) + "--match-set " + m.Set + " " + ipsetDirs(m.Key)
	case CtState:
		return "-m conntrack --ctstate " + strings.ToUpper(strings.Join(m.States.names(CtNew, CtRelated, CtEstablished), ","))
	case Local:
		opt := "--dst-type"
		if m.Src {
			opt = "--src-type"
		}
		return "-m addrtype " + not(m.Not) + opt + " LOCAL"
	case Mark:
		return fmt.Sprintf("-m mark %s--mark %#08x/%#08x", not(m.Not), m.Value, m.Mask)
	case PhysdevIsIn:
		return "-m physdev " + not(m.Not) + "--physdev-is-in"
	case IPVSConn:
		return fmt.Sprintf("-m ipvs --vaddr %s --vproto %s --vport %d", m.VS.Address, m.VS.Protocol.Lower(), m.VS.Port)
	}
	panic(fmt.Sprintf("iptables: match %T", m))
}

// ipsetDirs is ipset's direction list of a key: one direction per dimension of the set,
// a port's protocol part of the port's dimension.
func ipsetDirs(key []Field) string {
	var dirs []string
	for _, f := range key {
		switch f {
		case SrcAddr:
			dirs = append(dirs, "src")
		case DstAddr, FieldDstPort:
			dirs = append(dirs, "dst")
		}
	}
	return strings.Join(dirs, ",")
}

// targetWords are the targets without an operand, in iptables' and in nft's words.
var targetWords = map[TargetKind][2]string{
	Accept: {"ACCEPT", "accept"}, Drop: {"DROP", "drop"}, Return: {"RETURN", "return"}, Reject: {"REJECT", "reject"},
	Masquerade: {"MASQUERADE", "masquerade"}, MasqueradeFully: {"MASQUERADE --random-fully", "masquerade fully-random"},
}

// iptablesTarget prints a target as its "-j" option.
func iptablesTarget(t Target) string {
	if w, ok := targetWords[t.Kind]; ok {
		return "-j " + w[0]
	}
	switch t.Kind {
	case Jump:
		return "-j " + t.Chain
	case MarkOr:
		return fmt.Sprintf("-j MARK --or-mark %#08x", t.Mark)
	case MarkXor:
		return fmt.Sprintf("-j MARK --xor-mark %#08x", t.Mark)
	}
	panic(fmt.Sprintf("iptables: target %d", t.Kind))
}
