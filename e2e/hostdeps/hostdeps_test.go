package hostdeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const root = "../.."

func readList(t *testing.T) []Line {
	t.Helper()
	src, err := os.ReadFile("packages.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := ParseList(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// repoPrograms finds every program that the repository's Go files, shell scripts and
// Makefile run on the host or in the test VM, with where. This package's own files are
// left out (their tests hold example scripts), and so is the image's iptables wrapper,
// which runs inside the image with the Dockerfile's packages.
func repoPrograms(t *testing.T) map[string][]string {
	t.Helper()
	mine := func(n string) bool { return strings.HasPrefix(n, "e2e/hostdeps/") }
	goFiles, err := RepoFiles(root, func(n string) bool { return strings.HasSuffix(n, ".go") && !mine(n) })
	if err != nil {
		t.Fatal(err)
	}
	uses, err := GoCommands(goFiles)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, u := range uses {
		found[u.Program] = append(found[u.Program], u.Where)
	}
	scripts, err := RepoFiles(root, func(n string) bool {
		return (strings.HasSuffix(n, ".sh") || n == ".ci/run" || n == "Makefile") && !mine(n)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range scripts {
		text := string(src)
		if name == "Makefile" {
			text = MakefileScript(text)
		}
		for _, p := range ShellCommands(text) {
			found[p] = append(found[p], name)
		}
	}
	// The repository's own scripts run one another.
	own, err := RepoFiles(root, func(n string) bool { return strings.HasSuffix(n, ".sh") })
	if err != nil {
		t.Fatal(err)
	}
	for name := range own {
		delete(found, filepath.Base(name))
	}
	return found
}

// TestEveryProgramIsListed: a program that the repository runs and no line of
// packages.txt provides is one a fresh machine may lack.
func TestEveryProgramIsListed(t *testing.T) {
	listed := map[string]bool{}
	for _, l := range readList(t) {
		for _, p := range l.Programs {
			listed[p] = true
		}
	}
	found := repoPrograms(t)
	if len(found) < 20 {
		t.Fatalf("found only %d programs: the scan is broken", len(found))
	}
	var missing []string
	for p, where := range found {
		if !listed[p] {
			sort.Strings(where)
			missing = append(missing, p+" (run at "+strings.Join(where, ", ")+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("programs the repository runs that e2e/hostdeps/packages.txt does not list:\n  %s", strings.Join(missing, "\n  "))
	}
}

// TestListedProgramsShipped: each install and base line names programs that its package
// really ships (dpkg -S of the program on PATH, through its symlinks), and every base
// package is installed, as on a new machine.
func TestListedProgramsShipped(t *testing.T) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Skip("no dpkg here")
	}
	for _, l := range readList(t) {
		if l.Kind != "install" && l.Kind != "base" {
			continue
		}
		out, _ := exec.Command("dpkg-query", "-W", "-f=${db:Status-Abbrev}", l.Package).Output()
		if !strings.HasPrefix(string(out), "ii") {
			if l.Kind == "base" {
				t.Errorf("base package %s is not installed: move it to an install line", l.Package)
			} else {
				t.Logf("%s is not installed (make deps installs it): its programs are not checked", l.Package)
			}
			continue
		}
		for _, p := range l.Programs {
			if owner := ownerOf(p); owner != l.Package {
				t.Errorf("packages.txt says %s ships %s; dpkg says %q", l.Package, p, owner)
			}
		}
	}
}

// ownerOf returns the installed package that ships program p, as found on PATH (or in
// /usr/sbin, which a non-root PATH lacks), following symlinks such as alternatives.
func ownerOf(p string) string {
	path, err := exec.LookPath(p)
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/" + p); err2 != nil {
			return ""
		}
		path = "/usr/sbin/" + p
	}
	candidates := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		candidates = append(candidates, real)
	}
	for _, c := range candidates {
		// Debian's merged /usr: a package may list /bin/x for what PATH finds as /usr/bin/x.
		for _, q := range []string{c, strings.TrimPrefix(c, "/usr")} {
			out, _ := exec.Command("dpkg-query", "-S", q).Output()
			for _, line := range strings.Split(string(out), "\n") {
				if pkg, _, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(pkg, "diversion by") {
					return pkg
				}
			}
		}
	}
	return ""
}

// TestBusyboxApplets: the programs that only the VM runs are applets of the busybox
// the VM is made of.
func TestBusyboxApplets(t *testing.T) {
	out, err := exec.Command("busybox", "--list").Output()
	if err != nil {
		t.Skip("busybox is not installed (make deps installs it)")
	}
	applets := map[string]bool{}
	for _, a := range strings.Fields(string(out)) {
		applets[a] = true
	}
	for _, l := range readList(t) {
		if l.Kind != "vm" || l.Package != "busybox-static" {
			continue
		}
		for _, p := range l.Programs {
			if !applets[p] {
				t.Errorf("packages.txt: %s is no busybox applet", p)
			}
		}
	}
}

// TestNothingElseInstalls: install.sh is the one place that installs a host package.
func TestNothingElseInstalls(t *testing.T) {
	files, err := RepoFiles(root, func(n string) bool {
		return (strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".sh") || n == "Makefile") && !strings.HasPrefix(n, "e2e/hostdeps/")
	})
	if err != nil {
		t.Fatal(err)
	}
	installs := regexp.MustCompile(`apt-get( -\S+)* install -|"apt-get",( "-\S+",)* "install"|apt install |dpkg -i `)
	for name, src := range files {
		if m := installs.FindString(string(src)); m != "" {
			t.Errorf("%s installs a package (%q): add it to e2e/hostdeps/packages.txt instead", name, m)
		}
	}
}

// TestInstallScript runs install.sh against a stand-in dpkg-query and apt-get: with
// nothing installed it installs every install line's package in one apt-get call; with
// everything installed it runs no apt-get and prints nothing. dpkg-query exits 1 when it
// has never seen a package, as on a new machine.
func TestInstallScript(t *testing.T) {
	var want []string
	for _, l := range readList(t) {
		if l.Kind == "install" {
			want = append(want, l.Package)
		}
	}
	for _, tc := range []struct {
		name      string
		installed []string
		wantApt   bool
	}{{"new machine", nil, true}, {"all installed", want, false}, {"one missing", want[1:], true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			stub := func(name, body string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			stub("dpkg-query", `rc=0; shift 2; for p in "$@"; do case " $FAKE_INSTALLED " in *" $p "*) echo "$p ii ";; *) rc=1;; esac; done; exit $rc`)
			stub("apt-get", `echo "$*" >> "$FAKE_LOG"`)
			stub("id", "echo 0")
			log := filepath.Join(dir, "apt.log")
			cmd := exec.Command("./install.sh")
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "TMPDIR="+dir, "FAKE_LOG="+log,
				"FAKE_INSTALLED="+strings.Join(tc.installed, " "))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("install.sh: %v\n%s", err, out)
			}
			calls, _ := os.ReadFile(log)
			if !tc.wantApt {
				if len(calls) > 0 || len(out) > 0 {
					t.Errorf("everything installed, yet apt-get ran %q and install.sh printed %q", calls, out)
				}
				return
			}
			missing := want[:len(want)-len(tc.installed)]
			got := strings.Fields(strings.SplitN(string(calls), "\n", 2)[0])
			if !slices.Contains(got, "install") || !slices.Equal(got[len(got)-len(missing):], missing) {
				t.Errorf("apt-get called with %q, want an install of %q", calls, missing)
			}
		})
	}
}
