package main

import (
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestRulesBackendTable: every row is whole, names are unique, the first row is the
// default proxier gives an unset config (the flag's default is the first row), and
// lookups and the flag's help come from the table.
func TestRulesBackendTable(t *testing.T) {
	if def := (proxier.Config{}).WithDefaults().RulesBackend; def != rulesBackends[0].rules {
		t.Errorf("the first row is %s, proxier's default %s", rulesBackends[0].rules, def)
	}
	seen := map[string]bool{}
	for _, b := range rulesBackends {
		name := b.rules.Name
		if seen[name] || name == "" {
			t.Errorf("backend name %q empty or twice", name)
		}
		seen[name] = true
		if b.help == "" || b.open == nil || b.cleanup == nil || len(b.modules.Required) == 0 || b.setsModule == "" || b.sets == nil {
			t.Errorf("%s: row incomplete", name)
		}
		if got, err := lookupRulesBackend(name); err != nil || got.rules != b.rules {
			t.Errorf("lookup %s: %v, %v", name, got.rules, err)
		}
		if !strings.Contains(rulesBackendHelp(), name+" ("+b.help+")") {
			t.Errorf("--rules-backend's help lacks %s", name)
		}
	}
	if got, err := lookupRulesBackend(""); err != nil || got.rules != rulesBackends[0].rules {
		t.Errorf("lookup of no name: %v, %v", got.rules, err)
	}
	if _, err := lookupRulesBackend("ebpf"); err == nil || err.Error() != `rules backend "ebpf": want iptables or nftables` {
		t.Errorf("lookup of an unknown name: %v", err)
	}
}
