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
// dry-run.xml, and per proxy the junit-*.xml parts and wall.txt of the first folder that
// has them), without a cluster: `-from DIR[,DIR...]` writes the docs again, from a run
// stopped after some proxies, or from runs of one proxy each.
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
	for _, p := range conformance.Proxies {
		var parts []string
		dir := ""
		for _, d := range dirs {
			if parts, _ = filepath.Glob(filepath.Join(d, p, "junit-*.xml")); len(parts) > 0 {
				dir = d
				break
			}
		}
		if len(parts) == 0 {
			continue
		}
		sort.Strings(parts)
		run := &conformance.Run{Proxy: p, Results: map[string]conformance.Result{}}
		var seconds float64
		for _, part := range parts {
			b, err := os.ReadFile(part)
			if err != nil {
				return nil, err
			}
			res, err := conformance.ParseJUnit(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", part, err)
			}
			conformance.MergeResults(run.Results, res)
			s, _ := conformance.JUnitSeconds(b)
			seconds += s
		}
		run.Wall = time.Duration(seconds * float64(time.Second))
		if b, err := os.ReadFile(filepath.Join(dir, p, "wall.txt")); err == nil {
			if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
				run.Wall = d
			}
		}
		r.Runs[p] = run
	}
	if len(r.Runs) == 0 {
		return nil, fmt.Errorf("%s: no proxy's reports", strings.Join(dirs, ", "))
	}
	return r, nil
}
