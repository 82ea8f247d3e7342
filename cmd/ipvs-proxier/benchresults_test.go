package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// benchResults is the folder of the benchmarks' results, from the repository's root.
const benchResults = "bench/results"

var (
	// mdLink is an inline link's or image's target, and mdRef a reference definition's.
	mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	mdRef  = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)`)
	// resultsMention is a path from the root written out (`bench/results/kernel.md`), not
	// one inside a longer path (../bench/results) nor a commit's (42072e7:bench/results/...),
	// which git history holds.
	resultsMention = regexp.MustCompile(`(?:^|[^\w/:.\-])(bench/results(?:/[\w.\-]+)*)`)
)

// TestBenchResultsCited: bench/results holds one run per shape the pages cite, no
// notebook. Each run folder (a folder of bench/results with a file in it, or each folder
// of one that holds only folders, as fresh-vm/) is cited by a page outside it: a
// markdown link or a bench/results/... path in a markdown file, or a chart CSV's notes.
// Every bench/results path a page cites exists. A run no page cites leaves the folder for
// git history, with a row in bench/results/README.md's earlier runs.
func TestBenchResultsCited(t *testing.T) {
	tracked := gitFiles(t, benchResults)
	exists := map[string]bool{benchResults: true}
	for _, f := range tracked {
		for p := f; p != benchResults && p != "."; p = path.Dir(p) {
			exists[p] = true
		}
	}
	runs := resultRuns(tracked)
	if len(runs) == 0 {
		t.Fatalf("no run folders under %s", benchResults)
	}

	pages := gitFiles(t, "*.md")
	for _, f := range tracked {
		if path.Dir(f) == benchResults && strings.HasSuffix(f, ".csv") {
			pages = append(pages, f)
		}
	}
	cited := map[string]bool{}
	for _, page := range pages {
		b, err := os.ReadFile(path.Join("../..", page))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet staged
		} else if err != nil {
			t.Fatal(err)
		}
		// A page inside a run makes no run cited (one run citing the next is the
		// notebook again), but what it cites must exist.
		inRun := runOf(page, runs) != ""
		for _, c := range citations(page, string(b)) {
			if !exists[c] {
				t.Errorf("%s cites %s, which does not exist", page, c)
				continue
			}
			if r := runOf(c, runs); r != "" && !inRun {
				cited[r] = true
			}
		}
	}
	for _, r := range runs {
		if !cited[r] {
			t.Errorf("%s is cited by no page: cite the number it holds, or git rm -r it and add a row to %s/README.md's earlier runs", r, benchResults)
		}
	}
}

// citations returns the bench/results paths a page cites, from the repository's root:
// relative links (markdown only) resolved against the page's folder, and paths written
// out from the root.
func citations(page, text string) []string {
	var out []string
	if strings.HasSuffix(page, ".md") {
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range mdRef.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, ":") || strings.HasPrefix(target, "#") {
				continue // a URL, mailto:, or an anchor on the same page
			}
			target, _, _ = strings.Cut(target, "#")
			target, _, _ = strings.Cut(target, "?")
			var p string
			if strings.HasPrefix(target, "/") {
				p = path.Clean(strings.TrimPrefix(target, "/"))
			} else {
				p = path.Join(path.Dir(page), target)
			}
			if underResults(p) {
				out = append(out, p)
			}
		}
	}
	for _, m := range resultsMention.FindAllStringSubmatch(text, -1) {
		out = append(out, path.Clean(strings.TrimRight(m[1], ".")))
	}
	return out
}

// resultRuns returns bench/results' run folders: each folder of it that holds a file, and
// each folder of a folder that holds only folders (fresh-vm/).
func resultRuns(tracked []string) []string {
	set := map[string]bool{}
	for _, f := range tracked {
		parts := strings.Split(strings.TrimPrefix(f, benchResults+"/"), "/")
		switch {
		case len(parts) < 2: // a file of bench/results itself
		case len(parts) == 2 || holdsFile(tracked, parts[0]):
			set[benchResults+"/"+parts[0]] = true
		default:
			set[benchResults+"/"+parts[0]+"/"+parts[1]] = true
		}
	}
	runs := make([]string, 0, len(set))
	for r := range set {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	return runs
}

// holdsFile reports whether bench/results/dir holds a file of its own: a run, not a
// group of runs.
func holdsFile(tracked []string, dir string) bool {
	prefix := benchResults + "/" + dir + "/"
	for _, f := range tracked {
		if rest, ok := strings.CutPrefix(f, prefix); ok && !strings.Contains(rest, "/") {
			return true
		}
	}
	return false
}

// runOf returns the run folder p is or lies in, or "".
func runOf(p string, runs []string) string {
	for _, r := range runs {
		if p == r || strings.HasPrefix(p, r+"/") {
			return r
		}
	}
	return ""
}

func underResults(p string) bool {
	return p == benchResults || strings.HasPrefix(p, benchResults+"/")
}

// gitFiles lists the repository's tracked files that match pathspec, from its root.
func gitFiles(t *testing.T, pathspec string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", "../..", "ls-files", "-z", "--", pathspec).Output()
	if err != nil {
		t.Fatalf("git ls-files %s: %v", pathspec, err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}
