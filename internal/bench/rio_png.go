//go:build linux

package bench

import (
	"errors"
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
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
	var bars []barSeries
	for si, name := range series {
		vals := make(plotter.Values, len(groups))
		for g := range groups {
			vals[g] = value(si, g)
		}
		bars = append(bars, barSeries{name: name, color: plotutil.Color(si), values: vals})
	}
	// Wide enough for the bars, the legend and the title's longest line.
	titleWidth := p.Title.TextStyle.Rectangle(p.Title.Text).Size().X
	width := max(rioChartMinWidth, chartAxisRoom+vg.Length(len(groups))*rioChartGroup+2*vg.Inch, titleWidth+vg.Inch)
	// The bars of a group fill 70% of its slot; none is wider than rioChartMaxBar.
	return drawBars(w, p, groups, bars, peak*rioChartHeadroom, width, 0.7, rioChartMaxBar)
}
