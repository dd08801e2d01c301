package bench

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Sizes of the rio chart (the pipes chart's DPI, height and margins).
const (
	rioChartMinWidth = 7 * vg.Inch
	rioChartGroup    = 1.3 * vg.Inch // horizontal room per group of bars
	rioChartHeadroom = 1.12          // Y axis top over the tallest bar
	rioChartMaxBar   = 0.6 * vg.Inch // widest bar
)

// WriteRioPNG draws rio results as a grouped bar chart in PNG to w: for grid
// results, one group per rate × idle column and one bar per submission mode,
// of total latency statistic stat (a name from RioStats) in µs; for other
// results, one group per run with one bar per percentile. The legend is a
// column right of the bars, the Y axis starts at 0 and leaves room above the
// tallest bar.
func WriteRioPNG(w io.Writer, rs []RioResult, stat string, grid bool) error {
	if len(rs) == 0 {
		return errors.New("png: no results")
	}
	if _, ok := (RioLatency{}).stat(stat); !ok {
		return fmt.Errorf("png: unknown statistic %q", stat)
	}
	p := plot.New()
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = "total latency (µs, lower is better)"
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(11)
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	var groups []string
	var series []string
	var value func(series, group int) float64
	if grid {
		cols, rows, cell := gridLayout(rs)
		for _, c := range cols {
			groups = append(groups, c.String())
		}
		series = rows
		value = func(s, g int) float64 {
			v, _ := cell[rows[s]][cols[g]].Total.stat(stat)
			return v
		}
		p.Title.Text = fmt.Sprintf("ringev bench rio: %s total latency per mode\n%s", stat, rs[0].describeJob(false))
		p.X.Label.Text = "rate (IOPS) × SQ idle (ms)"
	} else {
		for _, r := range rs {
			groups = append(groups, r.modeName())
		}
		series = []string{"p50", "p90", "p99", "p99.9"}
		value = func(s, g int) float64 {
			v, _ := rs[g].Total.stat(series[s])
			return v
		}
		p.Title.Text = "ringev bench rio: total latency percentiles\n" + rs[0].describe()
	}
	peak := 0.0
	for s := range series {
		for g := range groups {
			peak = max(peak, value(s, g))
		}
	}
	p.Y.Min, p.Y.Max = 0, peak*rioChartHeadroom
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	p.Y.Tick.Marker = stepTicks{}
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	gridLines := plotter.NewGrid()
	gridLines.Vertical.Color = nil
	gridLines.Horizontal.Color = color.Gray{Y: 215}
	p.Add(gridLines)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(11)
	legend.ThumbnailWidth = vg.Points(16)
	legend.Padding = vg.Points(3)
	var bs []*plotter.BarChart
	for s, name := range series {
		vals := make(plotter.Values, len(groups))
		for g := range groups {
			vals[g] = value(s, g)
		}
		b, err := plotter.NewBarChart(vals, 1) // the width is set below, with the legend's
		if err != nil {
			return fmt.Errorf("png: %w", err)
		}
		b.Color = plotutil.Color(s)
		b.LineStyle.Width = 0
		bs = append(bs, b)
		legend.Add(name, b)
	}

	// Wide enough for the bars, the legend and the title's longest line.
	titleWidth := p.Title.TextStyle.Rectangle(p.Title.Text).Size().X
	width := max(rioChartMinWidth, chartAxisRoom+vg.Length(len(groups))*rioChartGroup+2*vg.Inch, titleWidth+vg.Inch)
	img := vgimg.NewWith(vgimg.UseWH(width, chartHeight), vgimg.UseDPI(chartDPI))
	dc := draw.New(img)
	legendWidth := legend.Rectangle(dc).Size().X
	plotArea := width - legendWidth - chartLegendGap - chartAxisRoom
	// The bars of a group fill 70% of its slot, centred on its tick; none is wider than
	// rioChartMaxBar (a single run's four bars).
	barWidth := min(0.7*plotArea/vg.Length(len(groups))/vg.Length(len(series)), rioChartMaxBar)
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
