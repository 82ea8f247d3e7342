package benchkit

import (
	"encoding/csv"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// JoinInts is ns as the comma-separated list the benchmarks' settings take.
func JoinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// NoteLines lists every note of every result as a Markdown item, "- PROXY @ SERVICES:
// NOTE", one a line; of returns a result's proxy, size and notes. It is "" when there
// are none.
func NoteLines[R any](rs []R, of func(R) (proxy string, services int, notes []string)) string {
	var lines []string
	for _, r := range rs {
		proxy, n, notes := of(r)
		for _, note := range notes {
			lines = append(lines, fmt.Sprintf("- %s @ %d: %s", proxy, n, note))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// CheckReport is for the benchmarks' report tests: in dir, the Markdown file md holds
// every string of want, the CSV file csv has rows lines (its header included), and the
// PNG file png decodes as a chart at least 800 pixels wide.
func CheckReport(t testing.TB, dir, md string, want []string, csv string, rows int, png string) {
	t.Helper()
	text, _ := os.ReadFile(filepath.Join(dir, md))
	for _, w := range want {
		if !strings.Contains(string(text), w) {
			t.Errorf("%s lacks %q:\n%s", md, w, text)
		}
	}
	table, _ := os.ReadFile(filepath.Join(dir, csv))
	if lines := strings.Count(string(table), "\n"); lines != rows {
		t.Errorf("%s has %d lines, want %d (a header and the rows):\n%s", csv, lines, rows, table)
	}
	checkChart(t, filepath.Join(dir, png))
}

func checkChart(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() < 800 {
		t.Errorf("%s: %v", path, err)
	}
}

// ReadCSV reads the rows of CSV files with a header line, each row as a map from column
// name to value, the files' rows in order: how the chart commands read the results the
// benchmarks wrote.
func ReadCSV(paths []string) ([]map[string]string, error) {
	var out []map[string]string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, row := range rows[min(1, len(rows)):] {
			m := map[string]string{}
			for i, h := range rows[0] {
				if i < len(row) {
					m[h] = strings.TrimSpace(row[i])
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// Num is a CSV value as a number; what does not parse ("—", "unfinished") is 0.
func Num(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}
