package reconcile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestREADMENumbers: the numbers this package's README states about its tests are the
// tree's.
func TestREADMENumbers(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("IPVS_PROXIER_TEST_NETNS") != "" {
		t.Skip("the test binary runs without its source tree (the VM tier)")
	}
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\. ([0-9]+) in all, against the fake`).FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md no longer states the scenario count")
	}
	paths, _ := filepath.Glob("testdata/scenarios/*.txtar")
	if n, _ := strconv.Atoi(string(m[1])); n != len(paths) {
		t.Errorf("README.md says %d scenario scripts; testdata/scenarios has %d", n, len(paths))
	}
}
