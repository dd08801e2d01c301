//go:build linux

package bench

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ringev/ringev/internal/kernel"
)

// Sizes of the pipes chart.
const (
	chartDPI       = 110
	chartHeight    = 5 * vg.Inch
	chartMinWidth  = 8 * vg.Inch
	chartBarPitch  = 0.2 * vg.Inch  // horizontal room per bar
	chartAxisRoom  = 0.9 * vg.Inch  // the Y axis and its label, left of the bars
	chartLegendGap = 0.15 * vg.Inch // between the plot and the legend column
)

// WritePipesPNG draws rs as a grouped bar chart in PNG to w: one group per shape (in the order
// of first appearance), one bar per backend and mode (Label; in the order of PipesModes(), then
// Backends(); a color per backend, lighter for fresh and darker for all), million events/sec on
// the Y axis, the legend in a column on the right. The title names the kernel release, the
// number of events of the fd runs and the context run's duration. A shape a backend did not run
// (context on the netpoller) has no bar.
func WritePipesPNG(w io.Writer, rs []Result) error {
	if len(rs) == 0 {
		return errors.New("png: no results to draw")
	}
	var shapes, labels []string
	peak := 0.0
	for _, r := range rs {
		if !slices.Contains(shapes, r.Shape) {
			shapes = append(shapes, r.Shape)
		}
		if !slices.Contains(labels, r.Label()) {
			labels = append(labels, r.Label())
		}
		peak = max(peak, r.EventsPerSec)
	}
	unit, unitName := 1e6, "million"
	if peak < 1e6 {
		unit, unitName = 1e3, "thousand"
	}
	value := map[[2]string]float64{} // shape, label -> events/sec in unit
	for _, r := range rs {
		value[[2]string{r.Shape, r.Label()}] = r.EventsPerSec / unit
	}
	peak /= unit
	first := map[string]Result{} // label -> a result with it, for the sort and the colors
	for _, r := range rs {
		if _, ok := first[r.Label()]; !ok {
			first[r.Label()] = r
		}
	}
	slices.SortStableFunc(labels, func(a, b string) int {
		ra, rb := first[a], first[b]
		return cmp.Or(
			cmp.Compare(slices.Index(PipesModes(), ra.modeOf()), slices.Index(PipesModes(), rb.modeOf())),
			cmp.Compare(rank(Backends(), ra.Backend), rank(Backends(), rb.Backend)))
	})

	p := plot.New()
	p.Title.Text = pipesTitle(rs)
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = unitName + " events/sec (higher is better)"
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(12)
	var series []barSeries
	for _, label := range labels {
		vals := make(plotter.Values, len(shapes))
		for g, shape := range shapes {
			vals[g] = value[[2]string{shape, label}]
		}
		series = append(series, barSeries{name: label, color: labelColor(first[label]), values: vals})
	}
	width := max(chartMinWidth, chartAxisRoom+vg.Length(len(shapes)*len(labels))*chartBarPitch+2*vg.Inch)
	return drawBars(w, p, shapes, series, peak*1.08, width, 0.8, 0)
}

// rank is the index of name in known, or len(known) for names it does not hold.
func rank(known []string, name string) int {
	if i := slices.Index(known, name); i >= 0 {
		return i
	}
	return len(known)
}

// labelColor is the bar color of r's backend and mode: a color per backend, mixed with white for
// mode fresh and with black for mode all.
func labelColor(r Result) color.Color {
	base := color.RGBAModel.Convert(plotutil.Color(rank(Backends(), r.Backend))).(color.RGBA)
	mix := func(to uint8, f float64) color.RGBA {
		m := func(c uint8) uint8 { return uint8(float64(c)*(1-f) + float64(to)*f) }
		return color.RGBA{m(base.R), m(base.G), m(base.B), 255}
	}
	switch r.modeOf() {
	case PipesModeFresh:
		return mix(255, 0.5)
	case PipesModeAll:
		return mix(0, 0.4)
	}
	return base
}

// pipesTitle is the chart's title: what, the kernel, the event count and the context duration.
func pipesTitle(rs []Result) string {
	var parts []string
	if k := kernel.Release(); k != "" {
		parts = append(parts, "Linux "+k)
	}
	for _, r := range rs {
		if r.Shape != ShapeContext {
			parts = append(parts, groupThousands(r.Events)+" events per run")
			break
		}
	}
	for _, r := range rs {
		if r.Shape == ShapeContext {
			parts = append(parts, fmt.Sprintf("context %g s", math.Round(r.Seconds*100)/100))
			break
		}
	}
	return "ringev bench pipes: events/sec per backend and shape\n" + strings.Join(parts, ", ")
}

// groupThousands formats n with commas between groups of three digits: 1,000,000.
func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// stepTicks marks the Y axis every 1, 2 or 5 × 10^k, at most ten intervals over its range, with
// labels in plain decimals.
type stepTicks struct{}

// Ticks implements plot.Ticker.
func (stepTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / 10
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi; i++ {
		v := i * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', prec, 64)})
	}
	return ticks
}
