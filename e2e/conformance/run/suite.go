package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// suiteRun runs e2e.test.
type suiteRun struct {
	bins       suiteBins
	kubectl    string
	kubeconfig string
	dir        string // reports and logs
	nodes      int
}

// e2eFlags are e2e.test's own flags: the cluster, the local provider (no cloud), the
// node count (the multi-node checks skip themselves unless told, as upstream's
// hack/ginkgo-e2e.sh tells them with --num-nodes), the pinned kubectl, a Debian node OS,
// reports in dir.
func (s suiteRun) e2eFlags(reportDir string) []string {
	return []string{"--kubeconfig=" + s.kubeconfig, "--provider=local", "--kubectl-path=" + s.kubectl, "--num-nodes=" + fmt.Sprint(s.nodes),
		"--node-os-distro=debian", "--report-dir=" + reportDir, "--e2e-output-dir=" + reportDir,
		"--dump-logs-on-failure=false", "--allowed-not-ready-nodes=0"}
}

// narrowed is the focus that runs exactly the candidates extra also matches: their
// names, quoted (ginkgo matches one regex against the whole text, and extra may overlap
// the selection's own focus).
func narrowed(candidates []string, extra string) (string, error) {
	re, err := regexp.Compile(extra)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range candidates {
		if re.MatchString(c) {
			parts = append(parts, regexp.QuoteMeta(c))
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("-focus %q matches none of the %d candidates", extra, len(candidates))
	}
	return strings.Join(parts, "|"), nil
}

// candidates lists every spec the focus picks: a dry run, which touches nothing.
func (s suiteRun) candidates(focus string) ([]string, error) {
	report := filepath.Join(s.dir, "dry-run.xml")
	args := append(s.e2eFlags(s.dir), "--ginkgo.dry-run", "--ginkgo.focus="+focus, "--ginkgo.junit-report="+report)
	if out, err := exec.Command(s.bins.E2ETest, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("e2e.test dry run: %w\n%s", err, tailOf(string(out), 30))
	}
	res, err := conformance.ReadJUnit(report)
	if err != nil {
		return nil, err
	}
	var out []string
	for name, r := range res {
		if r.Outcome != conformance.Skip {
			out = append(out, name)
		}
	}
	return out, nil
}

// run runs the specs focus picks, less the selection's skips, against the cluster as
// it is, the parallel specs with procs processes and then the [Serial] and [Disruptive]
// ones alone, and returns the merged results.
func (s suiteRun) run(name string, sel *conformance.Selection, focus string, procs int) (*conformance.Run, error) {
	start := time.Now()
	dir := filepath.Join(s.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	skip := sel.SkipRegex()
	serial := `\[Serial\]|\[Disruptive\]`
	results := map[string]conformance.Result{}
	for i, part := range []struct {
		name        string
		skip, focus string
		procs       int
	}{
		{"parallel", join(skip, serial), focus, procs},
		{"serial", skip, "(?:" + focus + ").*(?:" + serial + ")", 1},
	} {
		report := filepath.Join(dir, fmt.Sprintf("junit-%d-%s.xml", i+1, part.name))
		logFile := filepath.Join(dir, part.name+".log")
		ginkgoArgs := []string{"--ginkgo.focus=" + part.focus, "--ginkgo.junit-report=" + report, "--ginkgo.no-color", "--ginkgo.v",
			"--ginkgo.timeout=6h"}
		if part.skip != "" {
			ginkgoArgs = append(ginkgoArgs, "--ginkgo.skip="+part.skip)
		}
		var cmd *exec.Cmd
		if part.procs > 1 {
			// The ginkgo CLI runs a compiled suite in parallel: its own flags first,
			// then the binary, then the binary's flags after `--`.
			// --junit-report is relative to --output-dir for the CLI.
			args := []string{"--procs=" + fmt.Sprint(part.procs), "--no-color", "-v", "--timeout=6h", "--focus=" + part.focus,
				"--junit-report=" + filepath.Base(report), "--output-dir=" + dir}
			if part.skip != "" {
				args = append(args, "--skip="+part.skip)
			}
			cmd = exec.Command(s.bins.Ginkgo, append(append(args, s.bins.E2ETest, "--"), s.e2eFlags(dir)...)...)
		} else {
			cmd = exec.Command(s.bins.E2ETest, append(s.e2eFlags(dir), ginkgoArgs...)...)
		}
		f, err := os.Create(logFile)
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = f, f
		harness.Logf("%s: e2e.test, the %s specs (log %s)", name, part.name, logFile)
		err = cmd.Run() // exits non-zero when a spec fails; the report says which
		f.Close()
		res, rerr := conformance.ReadJUnit(report)
		if rerr != nil {
			return nil, fmt.Errorf("%s: %v (e2e.test: %v)\n%s", part.name, rerr, err, tailOf(readFile(logFile), 40))
		}
		conformance.MergeResults(results, res)
	}
	wall := time.Since(start)
	if err := os.WriteFile(filepath.Join(dir, "wall.txt"), []byte(wall.Round(time.Second).String()+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &conformance.Run{Proxy: name, Results: results, Wall: wall}, nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "|" + b
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func tailOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
