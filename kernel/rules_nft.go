package kernel

import (
	"fmt"
	"strings"
)

// nftLanguage is `nft list table`'s: the whole table, and a rule as a chain lists it.
var nftLanguage = language{
	ruleset: (*Ruleset).Nft,
	rule:    func(r *Ruleset, rule Rule) string { return nftRule(nftIP(r.Family), rule) },
}

// Nft prints the ruleset as `nft list table` prints its chains (sets are the IPSets
// backend's, FormatNftSets).
func (r *Ruleset) Nft() string {
	ip := nftIP(r.Family)
	var b strings.Builder
	b.WriteString("table " + ip + " " + r.Table + " {\n")
	for _, c := range r.Chains {
		fmt.Fprintf(&b, "\tchain %s {\n", c.Name)
		if c.Hook != "" {
			fmt.Fprintf(&b, "\t\ttype %s hook %s priority %s; policy accept;\n", c.Table, c.Hook, nftPriority(c.Hook, c.Priority))
		}
		for _, rule := range r.ChainRules(c) {
			b.WriteString("\t\t" + nftRule(ip, rule) + "\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// nftIP is nft's word for the family's network header.
func nftIP(f Family) string {
	if f == IPv6 {
		return "ip6"
	}
	return "ip"
}

// nftPriority prints a base chain's priority as nft does: by its name where nft has one
// for the hook.
func nftPriority(h Hook, p int32) string {
	switch {
	case p == 0:
		return "filter"
	case p == -150:
		return "mangle"
	case p == -100 && h == HookPrerouting:
		return "dstnat"
	case p == 100 && h == HookPostrouting:
		return "srcnat"
	}
	return fmt.Sprint(p)
}

// nftRule prints one rule: its matches, its target, then its comment.
func nftRule(ip string, rule Rule) string {
	var parts []string
	comment := ""
	for i, m := range rule.Matches {
		if c, ok := m.(Comment); ok {
			comment = fmt.Sprintf(" comment %q", c.Text)
			continue
		}
		// nft prints a protocol match and the port match after it as one: "tcp dport".
		if p, ok := m.(Proto); ok && i+1 < len(rule.Matches) && isPortMatch(rule.Matches[i+1]) {
			parts = append(parts, p.Protocol.Lower())
			continue
		}
		s := nftMatch(ip, m)
		if i > 0 && isPortMatch(m) {
			if _, ok := rule.Matches[i-1].(Proto); ok {
				s = strings.TrimPrefix(s, "th ")
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(append(parts, nftTarget(rule.Target)), " ") + comment
}

// isPortMatch reports whether m matches the destination port alone.
func isPortMatch(m Match) bool {
	switch m := m.(type) {
	case DstPort:
		return true
	case Lookup:
		return len(m.Key) == 1 && m.Key[0] == FieldDstPort
	}
	return false
}

// neq is nft's inequality before a value.
func neq(neg bool) string {
	if neg {
		return "!= "
	}
	return ""
}

// nftMatch prints one match.
func nftMatch(ip string, m Match) string {
	switch m := m.(type) {
	case IP:
		field := ip + " daddr "
		if m.Src {
			field = ip + " saddr "
		}
		v := m.Net.String()
		switch {
		case m.Addr.IsValid():
			v = m.Addr.String()
		case m.Net.IsSingleIP():
			v = m.Net.Addr().String()
		}
		return field + neq(m.Not) + v
	case Iface:
		name := m.Name
		if m.Prefix {
			name += "*"
		}
		return fmt.Sprintf("iifname %s%q", neq(m.Not), name)
	case Proto:
		return "meta l4proto " + m.Protocol.Lower()
	case DstPort:
		return fmt.Sprintf("th dport %d", m.Port)
	case Lookup:
		var key []string
		for _, f := range m.Key {
			key = append(key, nftField(ip, f))
		}
		return strings.Join(key, " . ") + " " + neq(m.Not) + "@" + m.Set
	case CtState:
		return "ct state " + strings.Join(m.States.names(CtNew, CtEstablished, CtRelated), ",")
	case Local:
		field := "daddr"
		if m.Src {
			field = "saddr"
		}
		return "fib " + field + " type " + neq(m.Not) + "local"
	case Mark:
		op := "=="
		if m.Not {
			op = "!="
		}
		return fmt.Sprintf("meta mark & 0x%08x %s 0x%08x", m.Mask, op, m.Value)
	}
	panic(fmt.Sprintf("nft: match %T", m))
}

// nftField prints a key field.
func nftField(ip string, f Field) string {
	switch f {
	case SrcAddr:
		return ip + " saddr"
	case DstAddr:
		return ip + " daddr"
	case L4Proto:
		return "meta l4proto"
	}
	return "th dport"
}

// nftTarget prints a target.
func nftTarget(t Target) string {
	if w, ok := targetWords[t.Kind]; ok {
		return w[1]
	}
	switch t.Kind {
	case Jump:
		return "jump " + t.Chain
	case MarkOr:
		return fmt.Sprintf("meta mark set meta mark | 0x%08x", t.Mark)
	case MarkXor:
		return fmt.Sprintf("meta mark set meta mark ^ 0x%08x", t.Mark)
	}
	panic(fmt.Sprintf("nft: target %d", t.Kind))
}
