package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// gatherCommand is `scalebench gather ALL.csv RESULTS.csv...`: ALL.csv (when it exists)
// and each run's results.csv, in order, into ALL.csv, a later row of the same Services,
// endpoints and proxy replacing the earlier one where it stood, new ones after; the
// rows sorted by Services, stably. The cells are copied as they are, in results.csv's
// columns: one an older run did not measure stays empty. bench/results/scale-all.csv
// gathers so (`SCALE_RUN=... make charts`).
func gatherCommand(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: scalebench gather ALL.csv RESULTS.csv...")
	}
	paths := args[1:]
	if _, err := os.Stat(args[0]); err == nil {
		paths = args
	}
	rows, err := benchkit.ReadCSV(paths)
	if err != nil {
		return err
	}
	var out []map[string]string
	at := map[[3]string]int{}
	for _, row := range rows {
		k := [3]string{row["services"], row["endpoints"], row["proxy"]}
		if i, ok := at[k]; ok {
			out[i] = row
			continue
		}
		at[k] = len(out)
		out = append(out, row)
	}
	slices.SortStableFunc(out, func(a, b map[string]string) int {
		return int(benchkit.Num(a["services"]) - benchkit.Num(b["services"]))
	})
	f, err := os.Create(args[0])
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(csvColumns)
	for _, row := range out {
		cells := make([]string, len(csvColumns))
		for i, c := range csvColumns {
			cells[i] = row[c]
		}
		_ = w.Write(cells)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
