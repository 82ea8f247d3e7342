// Package benchkit holds what the VM benchmarks share (`make bench-scale`, `make
// bench-dataplane`): the Services they create through the apiserver, the proxies they
// run one at a time on a node, the wipe between them, and their logging and settings.
package benchkit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Logf logs a benchmark's progress line to stderr with the time of day.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Env is the environment variable name, or def when it is unset or empty.
func Env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// EnvInt is Env as an integer; a value that is not one is logged and def used.
func EnvInt(name string, def int) int {
	n, err := strconv.Atoi(Env(name, strconv.Itoa(def)))
	if err != nil {
		Logf("%s: %v; using %d", name, err, def)
		return def
	}
	return n
}

// CPUModel is the host CPU's model name, for the results' machine line.
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// EnvInts is Env as a comma-separated list of whole numbers of at least least.
func EnvInts(name, def string, least int) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(Env(name, def), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			return nil, fmt.Errorf("%s: bad value %q", name, f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// Subcommand runs the subcommand os.Args[1] names among commands with the arguments
// after it, exiting 1 with its error; it reports whether there was one to run (a
// benchmark's `chart` and `gather`).
func Subcommand(prog string, commands map[string]func([]string) error) bool {
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		return false
	}
	if err := commands[os.Args[1]](os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
	return true
}

// Main is a benchmark command's main: it runs run and exits 1 with its error logged.
func Main(run func() error) {
	if err := run(); err != nil {
		Logf("%v", err)
		os.Exit(1)
	}
}
