package proxier

import "fmt"

// RulesBackend says what holds the sets and the fixed rules beside IPVS.
type RulesBackend string

// The two backends. iptables is kube-proxy's IPVS mode's (ipsets and iptables chains,
// so a rollback to kube-proxy finds what it made); nftables is one table of our own per
// family, for nodes with no ip_set, no xtables and no iptables binary.
const (
	RulesIptables RulesBackend = "iptables"
	RulesNftables RulesBackend = "nftables"
)

// NftTable is the name of our nftables table (one per family: `ip ipvs-proxier`, `ip6
// ipvs-proxier`, as kube-proxy's nftables mode has `ip kube-proxy` and `ip6 kube-proxy`).
const NftTable = "ipvs-proxier"

// ValidateRulesBackend checks a --rules-backend value ("" is iptables).
func ValidateRulesBackend(b RulesBackend) error {
	switch b {
	case "", RulesIptables, RulesNftables:
		return nil
	}
	return fmt.Errorf("rules backend %q: want %s or %s", b, RulesIptables, RulesNftables)
}
