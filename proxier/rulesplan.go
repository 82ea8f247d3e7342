package proxier

import (
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// planRules is what plan prints after the IPVS table and the addresses: the sets, sized
// as the daemon makes them, their members, and each family's rules.
type planRules struct {
	families []kernel.Family
	sets     []kernel.Set
	members  map[string][]kernel.SetEntry
	rules    func(kernel.Family) *kernel.Ruleset
}

// planIptables prints the sets as `ipset save` and each family's rules as
// iptables-restore input.
func planIptables(b *strings.Builder, p planRules) {
	b.WriteString("\n# ipset save\n")
	b.WriteString(kernel.FormatSets(p.sets, p.members))
	for _, f := range p.families {
		b.WriteString("\n# " + f.String() + " iptables-save\n")
		b.WriteString(p.rules(f).Iptables())
	}
}

// planNftables prints each family's table as `nft list table` does: its sets with
// their members, then its chains.
func planNftables(b *strings.Builder, p planRules) {
	for _, f := range p.families {
		var fsets []kernel.Set
		for _, s := range p.sets {
			if s.Family == f {
				fsets = append(fsets, s)
			}
		}
		b.WriteString("\n# " + f.String() + " nft list table\n")
		head, chains, _ := strings.Cut(p.rules(f).Nft(), "\n")
		b.WriteString(head + "\n" + kernel.FormatNftSets(fsets, p.members) + chains)
	}
}
