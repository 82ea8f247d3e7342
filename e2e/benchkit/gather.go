package benchkit

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Gather says how GatherCSV gathers a benchmark's runs.
type Gather struct {
	// Columns are the gathered CSV's; a cell a run lacks stays empty.
	Columns []string
	// Key are the columns whose values make a row's group: a step and a proxy. Every
	// run must have them.
	Key []string
	// Page is the name of the run's page beside each run's CSV (results.md); its
	// "Run DATE" line, when there is one, ends the notes of the run's rows as
	// "run of DATE", so a gathered row names its run.
	Page string
}

// runLine is the start of a benchmark page's "Run 2026-01-02 15:04 UTC on ..." line.
var runLine = regexp.MustCompile(`(?m)^Run (\d{4}-\d\d-\d\d \d\d:\d\d)`)

// GatherCSV gathers runs' CSVs into out: out's own rows (when it exists) and then each
// of in, in order. A later file's rows of a group replace every earlier file's rows of
// that group, where the first of them stood, so a newer run of a proxy at a step
// stands alone; a new group's rows come last, in their file's order. Cells are copied
// as they are.
// bench/results' scale-all.csv and dataplane-all.csv are gathered so (`make charts`
// with SCALE_RUN or DATAPLANE_RUN).
func GatherCSV(out string, in []string, g Gather) error {
	files := in
	if st, err := os.Stat(out); err == nil {
		for _, f := range in {
			if fst, err := os.Stat(f); err == nil && os.SameFile(st, fst) {
				return fmt.Errorf("%s: the gathered file given as a run too", f)
			}
		}
		files = append([]string{out}, in...)
	}
	groupOf := func(row map[string]string) string {
		var k []string
		for _, c := range g.Key {
			k = append(k, row[c])
		}
		return strings.Join(k, "\x00")
	}
	var acc []map[string]string
	for i, f := range files {
		if err := hasColumns(f, g.Key); err != nil {
			return err
		}
		rows, err := ReadCSV([]string{f})
		if err != nil {
			return err
		}
		if run := len(files) == len(in) || i > 0; run {
			if label := runLabel(filepath.Join(filepath.Dir(f), g.Page)); label != "" {
				for _, row := range rows {
					row["notes"] = strings.TrimPrefix(row["notes"]+"; "+label, "; ")
				}
			}
		}
		fresh := map[string][]map[string]string{}
		for _, row := range rows {
			k := groupOf(row)
			fresh[k] = append(fresh[k], row)
		}
		placed := map[string]bool{}
		var next []map[string]string
		for _, row := range acc {
			k := groupOf(row)
			if _, ok := fresh[k]; !ok {
				next = append(next, row)
			} else if !placed[k] {
				next, placed[k] = append(next, fresh[k]...), true
			}
		}
		for _, row := range rows {
			if !placed[groupOf(row)] {
				next = append(next, row)
			}
		}
		acc = next
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(g.Columns)
	for _, row := range acc {
		cells := make([]string, len(g.Columns))
		for i, c := range g.Columns {
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

// hasColumns fails when the CSV at path lacks one of the columns in its header (a
// header-less file, or another benchmark's).
func hasColumns(path string, columns []string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	header, err := csv.NewReader(f).Read()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range columns {
		if !slices.Contains(header, c) {
			return fmt.Errorf("%s: no %q column (its header: %s)", path, c, strings.Join(header, ","))
		}
	}
	return nil
}

// runLabel is "run of DATE" from the page's Run line, "" when there is none.
func runLabel(page string) string {
	b, err := os.ReadFile(page)
	if err != nil {
		return ""
	}
	if m := runLine.FindSubmatch(b); m != nil {
		return "run of " + string(m[1]) + " UTC"
	}
	return ""
}
