package bench

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WriteRioPNG draws rio results as a grouped bar chart into the PNG file
// path: for grid results, one group per rate × idle column and one bar per
// submission mode, of total latency statistic stat (a name from RioStats) in
// µs; for other results, one group per run with one bar per percentile.
func WriteRioPNG(path string, rs []RioResult, stat string, grid bool) error {
	if len(rs) == 0 {
		return fmt.Errorf("png: no results")
	}
	if _, ok := (RioLatency{}).stat(stat); !ok {
		return fmt.Errorf("png: unknown statistic %q", stat)
	}
	p := plot.New()
	p.Y.Label.Text = "total latency (µs)"
	p.Legend.Top = true
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
		p.Title.Text = fmt.Sprintf("rio %s latency: %s", stat, rs[0].describeJob(false))
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
		p.Title.Text = "rio: " + rs[0].describe()
	}
	w := vg.Points(60 / float64(len(series)))
	for s, name := range series {
		vals := make(plotter.Values, len(groups))
		for g := range groups {
			vals[g] = value(s, g)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("png: %w", err)
		}
		bars.Color = plotutil.Color(s)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(s)-float64(len(series)-1)/2)
		p.Add(bars)
		p.Legend.Add(name, bars)
	}
	p.NominalX(groups...)
	width := vg.Length(max(6, 1.2*float64(len(groups)))) * vg.Inch
	if err := p.Save(width, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("png %s: %w", path, err)
	}
	return nil
}
