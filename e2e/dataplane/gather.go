package main

import (
	"fmt"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// gatherCommand is `dataplane gather ALL.csv RUN.csv...`: runs' CSV rows into ALL.csv
// (benchkit.GatherCSV), a newer run's rows of a size and proxy (its repeats, the "run"
// column) replacing every older one's, each named by its run's date (its dataplane.md). bench/results/dataplane-all.csv gathers so
// (`DATAPLANE_RUN=... make charts`).
func gatherCommand(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: dataplane gather ALL.csv RUN.csv...")
	}
	return benchkit.GatherCSV(args[0], args[1:], benchkit.Gather{Columns: csvColumns, Key: []string{"services", "proxy"}, Page: "dataplane.md"})
}
