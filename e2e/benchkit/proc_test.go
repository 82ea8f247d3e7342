package benchkit

import (
	"testing"
	"time"
)

func TestParseProcCountsTheProgramsItRan(t *testing.T) {
	rss, peak, cpu := ParseProc("VmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n150 50 30 20\n")
	if rss != 100 || peak != 200 {
		t.Errorf("rss %v peak %v, want 100 and 200 MiB", rss, peak)
	}
	if cpu != 2500*time.Millisecond {
		t.Errorf("cpu %v, want 2.5s: utime, stime and the waited-for children's cutime and cstime", cpu)
	}
}
