package rules

import "testing"

// TestHasChains: a chain in either backend's saved form (iptables-save's ":NAME", nft's
// "chain NAME") marks a node that has rules; a table with no chain does not.
func TestHasChains(t *testing.T) {
	for _, tc := range []struct {
		name, saved string
		want        bool
	}{
		{"empty", "", false},
		{"iptables", "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n", true},
		{"nftables", "table ip ipvs-proxier {\n\tchain KUBE-SERVICES {\n\t}\n}\n", true},
		{"nftables, no chain", "table ip ipvs-proxier {\n}\n", false},
	} {
		if got := hasChains(tc.saved); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
