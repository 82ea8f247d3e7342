package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
)

// fromReports rebuilds the report from runs' reports folders (the first one's dry run,
// dry-run.xml, and per proxy the junit-*.xml parts and wall.txt of every folder that has
// them, merged in order, the times added), without a cluster: `-from DIR[,DIR...]` writes
// the docs again, from a run stopped after some proxies, from runs of one proxy each, or
// with a later focused run of some specs over an earlier one.
func fromReports(dirs []string, sel *conformance.Selection) (*conformance.Report, error) {
	dry, err := conformance.ReadJUnit(filepath.Join(dirs[0], "dry-run.xml"))
	if err != nil {
		return nil, err
	}
	r := &conformance.Report{Selection: sel, Runs: map[string]*conformance.Run{}}
	for name, res := range dry {
		if res.Outcome != conformance.Skip {
			r.Candidates = append(r.Candidates, name)
		}
	}
	for _, p := range conformance.Columns() {
		run := &conformance.Run{Proxy: p, Results: map[string]conformance.Result{}}
		for _, d := range dirs {
			wall, ok, err := mergeRun(run, filepath.Join(d, p))
			if err != nil {
				return nil, err
			}
			if ok {
				run.Wall += wall
				r.Runs[p] = run
			}
		}
	}
	if len(r.Runs) == 0 {
		return nil, fmt.Errorf("%s: no proxy's reports", strings.Join(dirs, ", "))
	}
	return r, nil
}

// mergeRun merges the JUnit parts in dir into run, later results over earlier skips,
// and returns the time they took (wall.txt, else the suites' own times); ok is false
// when dir has none.
func mergeRun(run *conformance.Run, dir string) (time.Duration, bool, error) {
	parts, _ := filepath.Glob(filepath.Join(dir, "junit-*.xml"))
	if len(parts) == 0 {
		return 0, false, nil
	}
	sort.Strings(parts)
	var seconds float64
	for _, part := range parts {
		b, err := os.ReadFile(part)
		if err != nil {
			return 0, false, err
		}
		res, err := conformance.ParseJUnit(b)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %w", part, err)
		}
		conformance.MergeResults(run.Results, res)
		s, _ := conformance.JUnitSeconds(b)
		seconds += s
	}
	wall := time.Duration(seconds * float64(time.Second))
	if b, err := os.ReadFile(filepath.Join(dir, "wall.txt")); err == nil {
		if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
			wall = d
		}
	}
	return wall, true, nil
}
