package linux

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestREADMENumbers: the numbers kernel/README.md states about this package are the
// code's.
func TestREADMENumbers(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("IPVS_PROXIER_TEST_NETNS") != "" {
		t.Skip("the test binary runs without its source tree (the VM tier)")
	}
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`DefaultNftBatch`, ([0-9,]+)\\)").FindSubmatch(b)
	if m == nil {
		t.Fatal("kernel/README.md no longer states DefaultNftBatch")
	}
	if n, _ := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", "")); n != DefaultNftBatch {
		t.Errorf("kernel/README.md says DefaultNftBatch is %s; the code: %d", m[1], DefaultNftBatch)
	}
}
