package main

import (
	"fmt"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// gatherCommand is `scalebench gather ALL.csv RESULTS.csv...`: runs' results.csv rows
// into ALL.csv (benchkit.GatherCSV), a newer row of a step (Services × endpoints) and
// proxy replacing the older, each named by its run's date (its results.md). bench/results/scale-all.csv gathers so
// (`SCALE_RUN=... make charts`).
func gatherCommand(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: scalebench gather ALL.csv RESULTS.csv...")
	}
	return benchkit.GatherCSV(args[0], args[1:], benchkit.Gather{Columns: csvColumns, Key: []string{"services", "endpoints", "proxy"}, Page: "results.md"})
}
