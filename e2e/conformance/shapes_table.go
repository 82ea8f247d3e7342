package conformance

import (
	"fmt"
	"strings"
)

// Every shape's page carries one table of every shape's counts (the "Cluster shapes"
// section), between two markers: writing one shape's page recomputes its own row and
// rewrites the table in every page, each other shape's row taken from its own page.

const (
	shapesBegin = "<!-- shapes: each row is written from its shape's own run -->"
	shapesEnd   = "<!-- /shapes -->"
)

// ShapeRow is this report's row of the shapes table: pass / selected per proxy run.
func (r *Report) ShapeRow() string {
	sel, _ := r.selected()
	var b strings.Builder
	fmt.Fprintf(&b, "| [%s](%s.md) | %d |", r.Shape, DocsName(r.Shape), len(sel))
	for _, p := range r.columns() {
		if _, ok := r.Runs[p]; !ok {
			b.WriteString(" — |")
			continue
		}
		pass, _, _ := r.Counts(p)
		fmt.Fprintf(&b, " %d |", pass)
	}
	return b.String()
}

// ShapesTable is the table's block from the rows (in Shapes' order; a shape without a
// row has not run).
func ShapesTable(rows map[string]string) string {
	var b strings.Builder
	b.WriteString(shapesBegin + "\n| shape | selected | " + titles(Columns(), " | ") + " |\n|---|---|" + strings.Repeat("---|", len(Columns())) + "\n")
	for _, s := range Shapes {
		if row, ok := rows[s.Name]; ok {
			b.WriteString(row + "\n")
		} else {
			fmt.Fprintf(&b, "| %s | not run yet |%s\n", s.Name, strings.Repeat(" |", len(Columns())))
		}
	}
	b.WriteString(shapesEnd)
	return b.String()
}

// OwnShapeRow is the row a shape's page holds for its own shape ("" when the page has
// no shapes table, or no row for it).
func OwnShapeRow(page []byte, shape string) string {
	block, ok := shapesBlock(string(page))
	if !ok {
		return ""
	}
	prefix := fmt.Sprintf("| [%s](", shape)
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

// ReplaceShapesTable puts table in place of the page's shapes block; ok is false when
// the page has none.
func ReplaceShapesTable(page []byte, table string) ([]byte, bool) {
	s := string(page)
	i, j := strings.Index(s, shapesBegin), strings.Index(s, shapesEnd)
	if i < 0 || j < i {
		return page, false
	}
	return []byte(s[:i] + table + s[j+len(shapesEnd):]), true
}

func shapesBlock(s string) (string, bool) {
	i, j := strings.Index(s, shapesBegin), strings.Index(s, shapesEnd)
	if i < 0 || j < i {
		return "", false
	}
	return s[i:j], true
}
