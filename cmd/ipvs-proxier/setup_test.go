package main

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// TestSetupProblem: a sysctl this container may not write (read-only /proc/sys, no
// permission) is a problem to report, not a crash loop; other failures, and every
// failure of --init-only, stop the daemon.
func TestSetupProblem(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("sysctl net/ipv4/conf/all/arp_ignore=1: %w", &fs.PathError{Op: "open", Err: err})
	}
	for _, tc := range []struct {
		err      error
		initOnly bool
		problem  bool
		fatal    bool
	}{
		{nil, false, false, false},
		{wrap(syscall.EROFS), false, true, false},
		{wrap(syscall.EACCES), false, true, false},
		{wrap(syscall.EPERM), false, true, false},
		{wrap(syscall.EROFS), true, false, true},
		{wrap(syscall.ENOENT), false, false, true},
	} {
		p, err := setupProblem(tc.err, tc.initOnly)
		if (p != "") != tc.problem || (err != nil) != tc.fatal {
			t.Errorf("setupProblem(%v, initOnly %v) = %q, %v", tc.err, tc.initOnly, p, err)
		}
		if p != "" && (!strings.Contains(p, "arp_ignore") || !strings.Contains(p, "delete the pod")) {
			t.Errorf("problem %q does not name the sysctl and the fix", p)
		}
	}
}
