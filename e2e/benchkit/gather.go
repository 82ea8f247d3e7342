package benchkit

import (
	"encoding/csv"
	"os"
	"slices"
	"strings"
)

// GatherCSV gathers benchmark runs' CSVs into one: out (read first, when it exists) and
// then each of in, in order. A later file's rows of a group (the same values in the key
// columns: a step and a proxy) replace every earlier file's rows of that group, so a
// newer run of a proxy at a step stands alone; the rows are sorted by the first key
// column as a number, stably. Cells are copied as they are into columns: one a file
// lacks (an older run's) stays empty. bench/results' scale-all.csv and dataplane-all.csv
// are gathered so (`make charts` with SCALE_RUN or DATAPLANE_RUN).
func GatherCSV(out string, in, columns, key []string) error {
	files := in
	if _, err := os.Stat(out); err == nil {
		files = append([]string{out}, in...)
	}
	groupOf := func(row map[string]string) string {
		var g []string
		for _, k := range key {
			g = append(g, row[k])
		}
		return strings.Join(g, "\x00")
	}
	var acc []map[string]string
	for _, f := range files {
		rows, err := ReadCSV([]string{f})
		if err != nil {
			return err
		}
		mine := map[string]bool{}
		for _, row := range rows {
			mine[groupOf(row)] = true
		}
		acc = slices.DeleteFunc(acc, func(row map[string]string) bool { return mine[groupOf(row)] })
		acc = append(acc, rows...)
	}
	slices.SortStableFunc(acc, func(a, b map[string]string) int {
		x, y := Num(a[key[0]]), Num(b[key[0]])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(columns)
	for _, row := range acc {
		cells := make([]string, len(columns))
		for i, c := range columns {
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
