package linux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExecIsListed: only command may call exec.Command, and it refuses a program
// that is not in Tools, so the image's package list (checked against Tools) covers every
// program the daemon runs.
func TestEveryExecIsListed(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "tools.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "exec.Command") {
			t.Errorf("%s calls exec.Command directly; use command() so the program is checked against Tools", f)
		}
	}
	if err := command("ipvsadm", "-Ln").Run(); err == nil || !strings.Contains(err.Error(), "linux.Tools") {
		t.Errorf("an unlisted program ran: %v", err)
	}
}
