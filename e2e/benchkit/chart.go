package benchkit

import (
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one line of a panel: a proxy's values against the Service count.
type Series struct {
	Name string
	XYs  plotter.XYs
	// DNF are the Service counts at which the proxy did not finish (no value): each is
	// drawn as a cross at the top of the panel in the series' colour, not left out.
	DNF []float64
}

// Panel is one chart of a row of charts.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
}

// logSpan is the ratio of a panel's largest to smallest value from which its y axis is
// logarithmic: on a linear axis the small values of a 100× span sit on the x axis.
const logSpan = 100

// Chart draws panels side by side into a PNG at path under title, one colour and marker
// per series name across the panels, with one legend below the panels (off the data);
// dnfNote labels the "did not finish" cross in it. A series with no points and no DNF
// is left out.
func Chart(path, title, dnfNote string, panels []Panel) error {
	style := map[string]int{}
	var legend []legendItem
	anyDNF := false
	var row []*plot.Plot
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = pn.Title, pn.XLabel, pn.YLabel
		p.BackgroundColor = color.White
		lo, hi := math.Inf(1), 0.0
		for _, s := range pn.Series {
			for _, xy := range s.XYs {
				if xy.Y > 0 {
					lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
				}
			}
		}
		if hi == 0 {
			lo, hi = 1, 1
		}
		var xs []float64
		for _, s := range pn.Series {
			for _, xy := range s.XYs {
				xs = append(xs, xy.X)
			}
			xs = append(xs, s.DNF...)
		}
		setXAxis(p, xs)
		log := hi/lo >= logSpan
		top := hi * 1.25 // where a DNF cross sits
		if log {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
			p.Y.Min, top = lo/2, hi*3
			p.Y.Label.Text += " (log)"
		} else {
			p.Y.Min = 0
		}
		p.Y.Max = top * 1.1
		dnfAt := map[float64]int{}
		for _, s := range pn.Series {
			if len(s.XYs) == 0 && len(s.DNF) == 0 {
				continue
			}
			i, ok := style[s.Name]
			if !ok {
				i = len(style)
				style[s.Name] = i
			}
			xys := s.XYs
			if log {
				// A log axis cannot place a zero (gonum's LogScale panics on one): the
				// series' zeros are left out of a log panel.
				xys = positive(xys)
			}
			if len(xys) > 0 {
				line, points, err := plotter.NewLinePoints(xys)
				if err != nil {
					return err
				}
				line.Color, points.Color, points.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
				p.Add(line, points)
				if !ok {
					legend = append(legend, legendItem{s.Name, []plot.Thumbnailer{line, points}})
				}
			} else if !ok {
				sw, _ := plotter.NewScatter(plotter.XYs{{}})
				sw.Color, sw.Shape = plotutil.Color(i), plotutil.Shape(i)
				legend = append(legend, legendItem{s.Name, []plot.Thumbnailer{sw}})
			}
			if len(s.DNF) > 0 {
				// Several proxies that did not finish at one size: one cross each, a
				// little lower than the one before, so none hides another.
				xys := make(plotter.XYs, len(s.DNF))
				for j, x := range s.DNF {
					y := top
					for k := 0; k < dnfAt[x]; k++ {
						if log {
							y /= 1.4
						} else {
							y -= 0.07 * top
						}
					}
					dnfAt[x]++
					xys[j] = plotter.XY{X: x, Y: y}
				}
				dnf, err := plotter.NewScatter(xys)
				if err != nil {
					return err
				}
				dnf.Color, dnf.Shape, dnf.Radius = plotutil.Color(i), draw.CrossGlyph{}, vg.Points(5)
				p.Add(dnf)
				anyDNF = true
			}
		}
		row = append(row, p)
	}
	if anyDNF {
		mark, _ := plotter.NewScatter(plotter.XYs{{}})
		mark.Color, mark.Shape, mark.Radius = color.Black, draw.CrossGlyph{}, vg.Points(5)
		legend = append(legend, legendItem{dnfNote, []plot.Thumbnailer{mark}})
	}
	// Two panels a row: four side by side would each be too narrow to read.
	cols := min(len(row), 2)
	rows := (len(row) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i, p := range row {
		grid[i/cols] = append(grid[i/cols], p)
	}
	for len(grid[rows-1]) < cols {
		grid[rows-1] = append(grid[rows-1], nil)
	}
	// The legend: three entries a row, below the panels.
	const perRow, entryH = 3, 0.3 * vg.Inch
	legendH := vg.Length((len(legend)+perRow-1)/perRow)*entryH + vg.Inch/4
	width := vg.Length(6*cols) * vg.Inch
	// The title on top (wrapped to the width), the panels, then the legend in a strip of
	// its own below.
	titled := plot.New()
	titled.Title.TextStyle.Font.Size = vg.Points(14)
	title = wrapText(title, width-vg.Inch/2, titled.Title.TextStyle.Width)
	titled.Title.Text = title
	titleH := titled.Title.TextStyle.Height(title) + vg.Inch/4
	height := vg.Length(4*rows)*vg.Inch + max(vg.Inch/2, titleH) + legendH
	img := vgimg.New(width, height)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tc := draw.Crop(dc, 0, 0, height-titleH, 0)
	titled.Title.TextStyle.XAlign, titled.Title.TextStyle.YAlign = draw.XCenter, draw.YTop
	tc.FillText(titled.Title.TextStyle, vg.Point{X: width / 2, Y: height - vg.Inch/8}, title)
	panelsArea := draw.Crop(dc, 0, 0, legendH, -titleH)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Inch / 2, PadY: vg.Inch / 3, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	canvases := plot.Align(grid, tiles, panelsArea)
	for i, p := range row {
		p.Draw(canvases[i/cols][i%cols])
	}
	for r := 0; r*perRow < len(legend); r++ {
		top := legendH - vg.Inch/8 - vg.Length(r)*entryH
		strip := draw.Crop(dc, vg.Inch/2, -vg.Inch/4, top-entryH, top-height)
		drawLegendRow(legend[r*perRow:min(len(legend), (r+1)*perRow)], strip, perRow)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}

// legendItem is one entry of the shared legend.
type legendItem struct {
	name   string
	thumbs []plot.Thumbnailer
}

// drawLegendRow draws the entries side by side across c, each in one of n equal columns.
func drawLegendRow(items []legendItem, c draw.Canvas, n int) {
	w := (c.Max.X - c.Min.X) / vg.Length(n)
	for i, it := range items {
		l := plot.NewLegend()
		l.Add(it.name, it.thumbs...)
		l.Left, l.Top = true, true
		col := c
		col.Min.X, col.Max.X = c.Min.X+vg.Length(i)*w, c.Min.X+vg.Length(i+1)*w
		l.Draw(col)
	}
}

// setXAxis makes the x axis logarithmic when the values span 10× or more (1,000 to
// 30,000 Services), with a tick at each value measured.
func setXAxis(p *plot.Plot, xs []float64) {
	if len(xs) == 0 {
		return
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo <= 0 || hi/lo < 10 {
		return
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	var ticks []plot.Tick
	for _, x := range xs {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = lo/1.3, hi*1.3
	p.X.Label.Text += " (log)"
}

// wrapText breaks s at spaces into lines no wider than w as measured by width.
func wrapText(s string, w vg.Length, width func(string) vg.Length) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && width(line+" "+word) > w {
			lines, line = append(lines, line), word
			continue
		}
		line = strings.TrimPrefix(line+" "+word, " ")
	}
	return strings.Join(append(lines, line), "\n")
}

// positive is xys without the points at or below zero.
func positive(xys plotter.XYs) plotter.XYs {
	var out plotter.XYs
	for _, xy := range xys {
		if xy.Y > 0 {
			out = append(out, xy)
		}
	}
	return out
}
