package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestConfigurationDoc: docs/configuration.md is what the flag set and the decoder say,
// and every field it names is one the decoder honours.
func TestConfigurationDoc(t *testing.T) {
	o := newOptions("ipvs-proxier")
	for fl, field := range fieldOfFlag {
		if o.fs.Lookup(fl) == nil {
			t.Errorf("fieldOfFlag names --%s, which does not exist", fl)
		}
		for _, part := range strings.Fields(strings.NewReplacer("(else", "", ")", "").Replace(field)) {
			if !slices.Contains(configFields, part) {
				t.Errorf("fieldOfFlag: %s is not a field the decoder honours (configFields)", part)
			}
		}
	}
	for fl, field := range flagFields {
		if fieldOfFlag[fl] != field {
			t.Errorf("--%s: error messages name %s, the page %q", fl, field, fieldOfFlag[fl])
		}
	}
	got := renderConfigDoc(o.fs)
	const page = "../../docs/configuration.md"
	if *update {
		if err := os.WriteFile(page, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(page)
	if err != nil || string(want) != got {
		t.Errorf("%s differs from the code (%v): run go test ./cmd/ipvs-proxier -run TestConfigurationDoc -update", page, err)
	}
}
