package main

import (
	"os"
	"path/filepath"
	"strings"
)

// The goroutine dumps a run keeps: at the start of the growth window and at the end, so
// that a growth verdict's cause (which stacks grew) can be read from the results.
const (
	goroutinesWindowFile = "goroutines-window.txt"
	goroutinesEndFile    = "goroutines-end.txt"
)

// withProfiling turns the daemon's /debug/pprof on (kube-proxy's enableProfiling, on the
// loopback metrics address) in the deployment's config.conf: the soak reads the
// goroutine profile through it. Nothing else of the DaemonSet's configuration changes.
func withProfiling(conf string) string {
	if strings.Contains(conf, "\nenableProfiling:") {
		return conf
	}
	return strings.TrimRight(conf, "\n") + "\nenableProfiling: true\n"
}

// goroutineScript fetches the daemon's goroutine profile, stacks grouped with their
// counts (debug=1), inside the node.
const goroutineScript = `printf 'GET /debug/pprof/goroutine?debug=1 HTTP/1.0\r\n\r\n' | timeout 60 nc 127.0.0.1 10249`

// dumpGoroutines writes the daemon's goroutine profile into the run's folder as name;
// a dump that cannot be read is left out (the growth verdicts do not depend on it).
func (s *soak) dumpGoroutines(name string) {
	out, err := s.node.MustExec(goroutineScript)
	if err != nil {
		return
	}
	if _, body, ok := strings.Cut(out, "\r\n\r\n"); ok {
		_ = os.WriteFile(filepath.Join(s.set.Out, name), []byte(body), 0o644)
	}
}
