package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestKubeProxyFlagNames: the --help grouping knows exactly kube-proxy v1.37's flags.
func TestKubeProxyFlagNames(t *testing.T) {
	var want []string
	for _, flag := range kubeProxyFlagFile(t) {
		want = append(want, flag[0])
	}
	got := slices.Clone(kubeProxyFlagNames)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kubeProxyFlagNames %v\nwant %v", got, want)
	}
}

// TestHelp: --help and `help` open with what the program is and its commands; the
// daemon's flags are listed once each, in kube-proxy's, ours or logging; a command's
// --help has its usage line and an example.
func TestHelp(t *testing.T) {
	var b bytes.Buffer
	o := newOptions("ipvs-proxier")
	daemonUsage(&b, o.fs)
	out := b.String()
	for _, want := range []string{"programs Linux IPVS", "ipvs-proxier plan [flags]", "kube-proxy's flags", "ipvs-proxier's own flags", "Logging:"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	listed := func(name string) []int { // the lines that list --name
		var at []int
		for i, l := range strings.Split(out, "\n") {
			if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "-"+name[:1]+", ")); len(f) > 0 && f[0] == "--"+name {
				at = append(at, i)
			}
		}
		return at
	}
	o.fs.VisitAll(func(f *pflag.Flag) {
		if n := len(listed(f.Name)); f.Hidden && n != 0 || !f.Hidden && n != 1 {
			t.Errorf("--%s listed %d times (hidden %v)", f.Name, n, f.Hidden)
		}
	})
	own := slices.Index(strings.Split(out, "\n"), "ipvs-proxier's own flags:")
	if at := listed("scheduler"); len(at) != 1 || at[0] < own {
		t.Error("--scheduler (ours) not listed among our own flags")
	}
	if at := listed("ipvs-scheduler"); len(at) != 1 || at[0] > own {
		t.Error("--ipvs-scheduler (kube-proxy's) not listed among kube-proxy's flags")
	}
	for _, cmd := range []string{"plan", "status", "cleanup"} {
		b.Reset()
		if err := runHelp([]string{cmd}, &b); err != nil {
			t.Fatalf("help %s: %v", cmd, err)
		}
		if s := b.String(); !strings.Contains(s, "Usage:\n  ipvs-proxier "+cmd) || !strings.Contains(s, "Example:") || !strings.Contains(s, "Flags:") {
			t.Errorf("help %s:\n%s", cmd, s)
		}
	}
	if err := runHelp([]string{"nope"}, &b); err == nil {
		t.Error("help nope: no error")
	}
	if code := run([]string{"help"}); code != 0 {
		t.Errorf("ipvs-proxier help exits %d", code)
	}
}

// TestCommandHelpGoesToStdout: `ipvs-proxier COMMAND --help` prints its usage to stdout
// and exits 0, for every command alike, so `... --help | less` shows it.
func TestCommandHelpGoesToStdout(t *testing.T) {
	for _, cmd := range []string{"plan", "status", "cleanup"} {
		stdout, stderr, code := captureRun(t, cmd, "--help")
		if code != 0 || !strings.Contains(stdout, "Usage:\n  ipvs-proxier "+cmd) || stderr != "" {
			t.Errorf("%s --help: exit %d\nstdout:\n%s\nstderr:\n%s", cmd, code, stdout, stderr)
		}
	}
}

// captureRun runs the command line as main does and returns what it wrote to stdout and
// stderr, and its exit code.
func captureRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	outF, errF := open("stdout"), open("stderr")
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	code = run(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	_ = outF.Close()
	_ = errF.Close()
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return string(o), string(e), code
}
