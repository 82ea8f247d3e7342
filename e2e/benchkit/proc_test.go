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

func TestParseCPUSplit(t *testing.T) {
	c, err := ParseCPUSplit("150 50 30 20\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.User != 1500*time.Millisecond || c.Sys != 500*time.Millisecond || c.Children != 500*time.Millisecond || c.Total() != 2500*time.Millisecond {
		t.Errorf("%v, want user 1.5 s, system 0.5 s, programs 0.5 s (cutime + cstime)", c)
	}
	if _, err := ParseCPUSplit("150 50\n"); err == nil {
		t.Error("two fields parsed without an error")
	}
}
