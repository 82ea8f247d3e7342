package main

import (
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// TestMaxCount: the largest of a metric's series (one per IP family), -1 for none.
func TestMaxCount(t *testing.T) {
	out := "kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"} 3\nkubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 1\n"
	if n := maxCount(out); n != 3 {
		t.Errorf("maxCount = %d, want 3", n)
	}
	if n := maxCount(""); n != -1 {
		t.Errorf("maxCount of nothing = %d, want -1", n)
	}
}

// TestMemstatsNote: the runtime's accounting of a scrape, in MiB; nothing without it.
func TestMemstatsNote(t *testing.T) {
	out := `go_memstats_heap_alloc_bytes 7.340032e+07
go_memstats_heap_inuse_bytes 1.048576e+08
go_memstats_heap_idle_bytes 5.24288e+07
go_memstats_heap_released_bytes 3.145728e+07
go_memstats_next_gc_bytes 9.437184e+07
go_memstats_stack_inuse_bytes 2.097152e+06
go_memstats_sys_bytes 1.6777216e+08
`
	want := "heap allocated 70 in spans of 100, free spans kept 20 (released 30), next GC at 90, stacks 2, runtime total 160"
	if got := memstatsNote(out); got != want {
		t.Errorf("memstatsNote = %q, want %q", got, want)
	}
	if got := memstatsNote("go_memstats_heap_alloc_bytes 1\n"); got != "" {
		t.Errorf("memstatsNote of a partial scrape = %q, want nothing", got)
	}
}

// TestRSSSplitNote: the resident set split as /proc/PID/status gives it, in MiB.
func TestRSSSplitNote(t *testing.T) {
	status := "RssAnon:\t  122880 kB\nRssFile:\t   30720 kB\nRssShmem:\t       0 kB\n"
	if got, want := rssSplitNote(status), "anonymous 120, files 30, shared 0"; got != want {
		t.Errorf("rssSplitNote = %q, want %q", got, want)
	}
	if got := rssSplitNote("RssAnon:\t 1 kB\n"); got != "" {
		t.Errorf("rssSplitNote of a partial status = %q, want nothing", got)
	}
}

// TestStepFileNamesEachOfOurs: two of ours at one step (addresses and route mode) keep
// their own profiles and logs; the daemon as deployed keeps the plain name.
func TestStepFileNamesEachOfOurs(t *testing.T) {
	for _, c := range []struct {
		p    benchkit.Proxy
		want string
	}{
		{benchkit.IPVSProxier, "heap-30000.pprof"},
		{benchkit.IPVSProxierRoutes, "heap-30000-routes.pprof"},
		{benchkit.IPVSProxierNftables, "heap-30000-nftables.pprof"},
	} {
		if got := stepFile(c.p, "heap", 30000, "pprof"); got != c.want {
			t.Errorf("stepFile(%q) = %q, want %q", c.p.Name, got, c.want)
		}
	}
}
