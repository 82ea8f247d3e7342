package rulescases

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Golden compares got with the golden file at path, after writing got there when
// update is set; a difference names its first line.
func Golden(t *testing.T, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	msg := fmt.Sprintf("%d lines, want %d", len(g), len(w))
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			msg = fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, g[i], w[i])
			break
		}
	}
	t.Errorf("%s differs (-update rewrites it): %s", path, msg)
}
