// Package hostdeps keeps the one list of host packages that the repository's tests,
// harness, demo and benchmarks need (packages.txt, installed by install.sh), and finds
// every program the repository runs so that a test can hold the two together.
package hostdeps

import (
	"fmt"
	"strings"
)

// Line is one package of packages.txt.
type Line struct {
	Kind     string // install, base, vm or built
	Package  string
	Programs []string
}

// kinds are the words a line may start with.
var kinds = map[string]bool{"install": true, "base": true, "vm": true, "built": true}

// ParseList reads packages.txt: KIND PACKAGE PROGRAM... a line, # comments.
func ParseList(src string) ([]Line, error) {
	var lines []Line
	for i, l := range strings.Split(src, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if !kinds[f[0]] || len(f) < 3 {
			return nil, fmt.Errorf("packages.txt:%d: want KIND PACKAGE PROGRAM..., KIND one of install, base, vm, built: %q", i+1, l)
		}
		lines = append(lines, Line{Kind: f[0], Package: f[1], Programs: f[2:]})
	}
	return lines, nil
}
