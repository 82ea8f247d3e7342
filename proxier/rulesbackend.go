package proxier

import (
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// RulesBackend is a rules backend as the translation and plan see it: what holds the
// sets and the fixed rules beside IPVS, the chains its rules are built in, what its
// rules language lacks, and how plan prints its sets and rules. The daemon's table of
// backends (cmd/ipvs-proxier/backends.go) pairs each with its kernel implementation,
// the kernel modules it needs and its cleanup; nothing else chooses between them.
type RulesBackend struct {
	// Name is its --rules-backend value, and its label in metrics and status.
	Name string
	// Table is the table of our own that holds every chain and set of a family (`nft
	// list table ip NAME`); empty where the chains are in iptables' nat and filter
	// tables and the sets are ipsets.
	Table string
	// chains are the chains of a family's rules in the order they are declared, base
	// chains first: the rules for a hook go in the first base chain of their table
	// that hooks there.
	chains func() []kernel.Chain
	// filterNodePort names the filter table's KUBE-NODE-PORT: apart from the nat
	// table's where one table holds both.
	filterNodePort string
	// outFilter is the base chain that jumps to KUBE-IPVS-OUT-FILTER: filter's output
	// after IPVS where `-m ipvs` matches its connections, one before IPVS otherwise.
	outFilter string
	// xtables: iptables' matches are there (`-m physdev`, `-m ipvs`), so the rules are
	// kube-proxy's IPVS mode's match for match. Without them (nftables: Rules lists
	// what differs) the out filter matches the VIP as destination, the physdev rule is
	// left out, and a port set's lookup carries its protocol.
	xtables bool
	// plan prints the sets and every family's rules as the backend's tools show them.
	plan func(b *strings.Builder, p planRules)
}

// String is the backend's name.
func (b *RulesBackend) String() string { return b.Name }

// The backends. iptables is kube-proxy's IPVS mode's (ipsets and iptables chains, so a
// rollback to kube-proxy finds what it made), and the default; nftables is one table of
// our own per family, for nodes with no ip_set, no xtables and no iptables binary.
var (
	RulesIptables = &RulesBackend{Name: "iptables", chains: iptablesChains, filterNodePort: chainNodePort,
		outFilter: "OUTPUT", xtables: true, plan: planIptables}
	RulesNftables = &RulesBackend{Name: "nftables", Table: NftTable, chains: nftChains,
		filterNodePort: chainFilterNodePort, outFilter: nftFilterOutputPreIPVS, plan: planNftables}
)

// NftTable is the name of our nftables table (one per family: `ip ipvs-proxier`, `ip6
// ipvs-proxier`, as kube-proxy's nftables mode has `ip kube-proxy` and `ip6 kube-proxy`).
const NftTable = "ipvs-proxier"

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
