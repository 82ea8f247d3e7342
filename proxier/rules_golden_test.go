package proxier_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/proxier/rulescases"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRulesGolden: the rules of every configuration of rulescases, both families, as
// each backend prints them (testdata/rules-iptables.golden, rules-nftables.golden;
// -update rewrites them).
func TestRulesGolden(t *testing.T) {
	for _, b := range []*proxier.RulesBackend{proxier.RulesIptables, proxier.RulesNftables} {
		var got strings.Builder
		for _, c := range rulescases.Cases(b) {
			for _, f := range rulescases.Families {
				got.WriteString("# " + c.Name + " " + f.String() + "\n")
				got.WriteString(proxier.Rules(&c.Config, f, c.OutFilters).String())
			}
		}
		rulescases.Golden(t, "testdata/rules-"+b.Name+".golden", got.String(), *update)
	}
}
