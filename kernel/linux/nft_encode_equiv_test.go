package linux

import (
	"bytes"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/proxier/rulescases"
)

// TestEncodeIsCompiledText: for every configuration of rulescases and both families, the
// netlink messages of a restore encoded from the typed ruleset are byte for byte those
// of the rendered nft text compiled by the text compiler.
func TestEncodeIsCompiledText(t *testing.T) {
	for _, c := range rulescases.Cases(proxier.RulesNftables) {
		for _, f := range rulescases.Families {
			fam := NewNftables(proxier.NftTable).table(f).Family
			old, err := parseNftTable(fam, proxier.LegacyNftText(&c.Config, f, c.OutFilters))
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeNftTable(proxier.Rules(&c.Config, f, c.OutFilters))
			if err != nil {
				t.Fatal(err)
			}
			want, have := restoreMessages(t, f, old), restoreMessages(t, f, got)
			if len(want) != len(have) {
				t.Fatalf("%s %s: %d messages, want %d", c.Name, f, len(have), len(want))
			}
			for i := range want {
				if !bytes.Equal([]byte(have[i]), []byte(want[i])) {
					t.Errorf("%s %s message %d:\n%s\nwant\n%s", c.Name, f, i, have[i], want[i])
				}
			}
		}
	}
}
