package proxier_test

import (
	"flag"
	"fmt"
	"os"
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
	for _, b := range []proxier.RulesBackend{proxier.RulesIptables, proxier.RulesNftables} {
		var got strings.Builder
		for _, c := range rulescases.Cases(b) {
			for _, f := range rulescases.Families {
				got.WriteString("# " + c.Name + " " + f.String() + "\n")
				got.WriteString(proxier.Rules(&c.Config, f, c.OutFilters).String())
			}
		}
		name := "testdata/rules-" + string(b) + ".golden"
		if *update {
			if err := os.WriteFile(name, []byte(got.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Errorf("%s differs (-update rewrites it):\n%s", name, firstDiff(got.String(), string(want)))
		}
	}
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
