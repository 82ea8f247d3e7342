package benchkit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// CPUSplit is a process's CPU time by where it went: its own user and system time, and
// the programs it ran and waited for (proc(5) utime, stime, cutime + cstime).
type CPUSplit struct {
	User, Sys, Children time.Duration
}

// Total is the sum of the three.
func (c CPUSplit) Total() time.Duration { return c.User + c.Sys + c.Children }

// Sub is c minus an earlier reading.
func (c CPUSplit) Sub(o CPUSplit) CPUSplit {
	return CPUSplit{c.User - o.User, c.Sys - o.Sys, c.Children - o.Children}
}

// String reads "user 1.20 s, system 0.40 s, programs 0.10 s".
func (c CPUSplit) String() string {
	return fmt.Sprintf("user %.2f s, system %.2f s, programs %.2f s", c.User.Seconds(), c.Sys.Seconds(), c.Children.Seconds())
}

// ProcCPU reads a proxy process's CPU time, split.
func ProcCPU(node *harness.Node, p Proxy) (CPUSplit, error) {
	out, err := node.MustExec("cut -d' ' -f14-17 /proc/$(cat " + p.PIDFile + ")/stat")
	if err != nil {
		return CPUSplit{}, err
	}
	return ParseCPUSplit(out)
}

// ParseCPUSplit reads /proc/PID/stat's fields 14-17 (utime, stime, cutime, cstime, in
// USER_HZ = 100 ticks).
func ParseCPUSplit(out string) (CPUSplit, error) {
	f := strings.Fields(out)
	if len(f) != 4 {
		return CPUSplit{}, fmt.Errorf("stat fields 14-17: %q", out)
	}
	var t [4]int64
	for i, v := range f {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return CPUSplit{}, fmt.Errorf("stat fields 14-17: %q", out)
		}
		t[i] = n
	}
	tick := 10 * time.Millisecond
	return CPUSplit{User: time.Duration(t[0]) * tick, Sys: time.Duration(t[1]) * tick, Children: time.Duration(t[2]+t[3]) * tick}, nil
}
