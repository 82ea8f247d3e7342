package hostdeps

import (
	"regexp"
	"strings"
)

var (
	makeShell = regexp.MustCompile(`\$\(shell ([^)]*)\)`)
	// makeFunc is a call of one of make's text functions, which runs nothing.
	makeFunc = regexp.MustCompile(`\$\((abspath|realpath|dir|notdir|basename|wildcard|patsubst|subst|word|firstword|addprefix|addsuffix|strip|filter|sort) [^)]*\)`)
)

// MakefileScript returns the shell that a Makefile's recipes run, one recipe line a
// line: the tab and the @ or - prefixes removed, $(GO) and $(MAKE) as the programs they
// name, make's text functions as a word, $$ as $; and the commands of $(shell ...) calls.
func MakefileScript(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		for _, m := range makeShell.FindAllStringSubmatch(line, -1) {
			b.WriteString(m[1] + "\n")
		}
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		line = strings.TrimLeft(strings.TrimPrefix(line, "\t"), "@-")
		line = makeFunc.ReplaceAllString(line, "MAKEFUNC")
		line = strings.NewReplacer("$(GO)", "go", "$(MAKE)", "make", "$$", "$").Replace(line)
		b.WriteString(line + "\n")
	}
	return b.String()
}
