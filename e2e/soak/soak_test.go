package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestSoakShort is the soak's short form: 10 minutes at 500 Services x 4 endpoints,
// every fault kind, every verdict; a stuck drain, a lost change, a goroutine, fd or
// netlink socket leak beyond noise, or the heap in use growing by half within its
// 5-minute growth window fails it (a slower memory leak needs the 2-hour form).
// Its results go to the test's temporary folder, or to SOAK_OUT when set.
func TestSoakShort(t *testing.T) {
	harness.RequireE2E(t)
	harness.RequireAll(t, "no soak; the short one takes about 20 minutes of VM time")
	set := defaults(10*time.Minute, 500)
	set.Out = t.TempDir()
	if out := os.Getenv("SOAK_OUT"); out != "" {
		set.Out = out
	}
	vs, err := runSoak(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if !v.Pass {
			t.Errorf("%s: %s", v.Name, v.Detail)
		}
	}
}
