package conformance

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"time"
)

// CarryOver gives each proxy this report did not run the column the previous
// conformance.csv held for it (and its wall time from the previous conformance.md's
// results table, when that is given), so that writing the docs from a run of some
// proxies keeps the others' results. Columns are found by the CSV's header, so a CSV
// written before a column existed carries what it has; an empty column carries nothing.
// It returns the proxies carried, in column order.
func (r *Report) CarryOver(prevCSV, prevMD []byte) ([]string, error) {
	rows, err := csv.NewReader(bytes.NewReader(prevCSV)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("previous conformance.csv: %w", err)
	}
	if len(rows) == 0 || len(rows[0]) == 0 || rows[0][0] != "test" {
		return nil, fmt.Errorf("previous conformance.csv: no test,PROXY... header")
	}
	walls := previousWalls(prevMD)
	var carried []string
	for _, name := range Columns() {
		if _, ran := r.Runs[name]; ran {
			continue
		}
		col := -1
		for i, h := range rows[0] {
			if h == name {
				col = i
			}
		}
		if col < 1 {
			continue
		}
		run := &Run{Proxy: name, Results: map[string]Result{}, Wall: walls[name], Carried: true}
		for _, row := range rows[1:] {
			if col >= len(row) || row[col] == "" {
				continue
			}
			switch o := Outcome(row[col]); o {
			case Pass, Fail, Skip:
				run.Results[row[0]] = Result{Outcome: o}
			default:
				return nil, fmt.Errorf("previous conformance.csv: %s for %q: %q is not pass, fail or skip", name, row[0], o)
			}
		}
		if len(run.Results) > 0 {
			r.Runs[name] = run
			carried = append(carried, name)
		}
	}
	return carried, nil
}

// previousWalls reads the wall time row of a conformance.md's results table, by the
// titles of its header row.
func previousWalls(md []byte) map[string]time.Duration {
	out := map[string]time.Duration{}
	var header []string
	for _, line := range strings.Split(string(md), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case len(cells) > 1 && cells[0] == "" && header == nil:
			header = cells
		case len(cells) > 1 && cells[0] == "wall time" && header != nil:
			for i := 1; i < len(cells) && i < len(header); i++ {
				for _, p := range Table {
					if p.Title == header[i] {
						if d, err := time.ParseDuration(cells[i]); err == nil {
							out[p.Name] = d
						}
					}
				}
			}
			return out
		}
	}
	return out
}
