//go:build linux

package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// barSeries is one bar per group of a grouped bar chart: its legend name, color and values
// (one per group, in the groups' order).
type barSeries struct {
	name   string
	color  color.Color
	values plotter.Values
}

// drawBars finishes p (title and axis labels already set) as a grouped bar chart and writes it to
// w as PNG: one group per name in groups, centred on its tick, one bar per series in each group,
// filling fill of the group's slot (each bar at most maxBar wide; 0: no cap); the Y axis from 0
// to top with horizontal grid lines; the legend in a column right of the plot, level with the
// top of the data area; a canvas width wide and chartHeight high at chartDPI.
func drawBars(w io.Writer, p *plot.Plot, groups []string, series []barSeries, top float64, width vg.Length, fill float64, maxBar vg.Length) error {
	p.Y.Min, p.Y.Max = 0, top
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	p.Y.Tick.Marker = stepTicks{}
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	grid.Horizontal.Color = color.Gray{Y: 215}
	p.Add(grid)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(11)
	legend.ThumbnailWidth = vg.Points(16)
	legend.Padding = vg.Points(3)
	var bs []*plotter.BarChart
	for _, s := range series {
		b, err := plotter.NewBarChart(s.values, 1) // the width is set below, with the legend's
		if err != nil {
			return fmt.Errorf("png: %w", err)
		}
		b.Color = s.color
		b.LineStyle.Width = 0
		bs = append(bs, b)
		legend.Add(s.name, b)
	}

	img := vgimg.NewWith(vgimg.UseWH(width, chartHeight), vgimg.UseDPI(chartDPI))
	dc := draw.New(img)
	legendWidth := legend.Rectangle(dc).Size().X
	plotArea := width - legendWidth - chartLegendGap - chartAxisRoom
	barWidth := vg.Length(fill) * plotArea / vg.Length(len(groups)) / vg.Length(len(series))
	if maxBar > 0 {
		barWidth = min(barWidth, maxBar)
	}
	for i, b := range bs {
		b.Width = barWidth
		b.Offset = barWidth * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(b)
	}
	p.NominalX(groups...)

	p.Draw(draw.Crop(dc, 0, -(legendWidth + chartLegendGap), 0, 0))
	titleRoom := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + 2*p.Title.Padding
	legend.Draw(draw.Crop(dc, width-legendWidth-chartLegendGap/2, 0, 0, -titleRoom))

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("png: encoding: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
