package benchkit

import (
	"strconv"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// Proc reads a proxy process's resident memory (now and peak, MiB) and CPU time.
func Proc(node *harness.Node, p Proxy) (rss, peak float64, cpu time.Duration, err error) {
	out, err := node.MustExec("pid=$(cat " + p.PIDFile + "); grep -E '^(VmRSS|VmHWM)' /proc/$pid/status; cut -d' ' -f14-17 /proc/$pid/stat")
	if err != nil {
		return
	}
	rss, peak, cpu = ParseProc(out)
	return
}

// ParseProc reads VmRSS and VmHWM lines and /proc/PID/stat's fields 14-17: utime,
// stime, and cutime and cstime, the CPU of the programs the process ran and waited for
// (proc(5)). Both proxies run iptables (and kube-proxy ipset) as programs on every sync,
// so a proxy's own CPU alone left that out.
func ParseProc(out string) (rss, peak float64, cpu time.Duration) {
	var ticks int64
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "VmRSS:":
			kb, _ := strconv.ParseFloat(f[1], 64)
			rss = kb / 1024
		case len(f) >= 2 && f[0] == "VmHWM:":
			kb, _ := strconv.ParseFloat(f[1], 64)
			peak = kb / 1024
		case len(f) == 4:
			for _, v := range f {
				n, _ := strconv.ParseInt(v, 10, 64)
				ticks += n
			}
		}
	}
	return rss, peak, time.Duration(ticks) * 10 * time.Millisecond // USER_HZ = 100
}
