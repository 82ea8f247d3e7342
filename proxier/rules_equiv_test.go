package proxier_test

import (
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/proxier/rulescases"
)

// TestRulesPrintAsTheTextRenderers: for every configuration of rulescases, both
// families and both backends, the typed ruleset prints exactly the text the hand-written
// renderers wrote: iptables-restore input and `nft list table`.
func TestRulesPrintAsTheTextRenderers(t *testing.T) {
	for _, b := range []proxier.RulesBackend{proxier.RulesIptables, proxier.RulesNftables} {
		for _, c := range rulescases.Cases(b) {
			for _, f := range rulescases.Families {
				rs := proxier.Rules(&c.Config, f, c.OutFilters)
				old, got := proxier.LegacyIptablesText(&c.Config, f, c.OutFilters), rs.Iptables()
				if b == proxier.RulesNftables {
					old, got = proxier.LegacyNftText(&c.Config, f, c.OutFilters), rs.Nft()
				}
				if got != old {
					t.Errorf("%s %s:\n%s\nwant\n%s", c.Name, f, got, old)
				}
				if rs.String() != got {
					t.Errorf("%s %s: String is not the backend's text", c.Name, f)
				}
			}
		}
	}
}
