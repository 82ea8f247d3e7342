package benchkit

import (
	"image/color"
	"os"

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
}

// Panel is one chart of a row of charts.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
}

// Chart draws panels side by side into a PNG at path, one colour and marker per series
// name across the panels; a series with no points is left out.
func Chart(path string, panels []Panel) error {
	var row []*plot.Plot
	style := map[string]int{}
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = pn.Title, pn.XLabel, pn.YLabel
		for _, s := range pn.Series {
			if len(s.XYs) == 0 {
				continue
			}
			i, ok := style[s.Name]
			if !ok {
				i = len(style)
				style[s.Name] = i
			}
			line, points, err := plotter.NewLinePoints(s.XYs)
			if err != nil {
				return err
			}
			line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
			points.Shape = plotutil.Shape(i)
			p.Add(line, points)
			p.Legend.Add(s.Name, line, points)
		}
		p.Y.Min = 0
		p.Legend.Top = true
		p.BackgroundColor = color.White
		row = append(row, p)
	}
	img := vgimg.New(vg.Length(6*len(row))*vg.Inch, 4.5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Inch / 4, PadY: vg.Inch / 8, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, dc)
	for i, p := range row {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
