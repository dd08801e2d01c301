//go:build linux

package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// cacheName is how the tables name a row's cache mode.
func cacheName(direct bool) string {
	if direct {
		return "O_DIRECT"
	}
	return "page cache"
}

// label names a row's API the way the table's and the chart's legends do.
func (r FileResult) label() string {
	if r.API == APIOS {
		return "os.File"
	}
	return "ringev " + r.Mode
}

// osBase returns the os.File row with r's cache mode and goroutine count in rs, if any.
func osBase(rs []FileResult, r FileResult) (FileResult, bool) {
	for _, b := range rs {
		if b.API == APIOS && b.Direct == r.Direct && b.Goroutines == r.Goroutines && b.IOPS > 0 {
			return b, true
		}
	}
	return FileResult{}, false
}

// WriteFileTable prints rs as a table, one line per row in the order given: cache mode,
// goroutines, API and mode, IOPS, p50/p99/p99.9 latency (µs), CPU µs per operation (the
// process's user+system time over the row), the most OS threads, and for ringev rows the
// ratios of IOPS and CPU per operation to the os.File row with the same cache mode and
// goroutines, and the share of operations that went through the ring (the rest were read
// from the page cache by the caller).
func WriteFileTable(w io.Writer, rs []FileResult) error {
	if len(rs) == 0 {
		return nil
	}
	head := rs[0]
	rate := "unlimited"
	if head.Rate > 0 {
		rate = fmt.Sprintf("%d IOPS", head.Rate)
	}
	fmt.Fprintf(w, "file: %s %s, rate %s, %g s per row\n", head.RW, formatBytes(int64(head.BS)), rate, math.Round(head.Seconds*100)/100)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "cache\tgoroutines\tapi\tIOPS\tp50 µs\tp99 µs\tp99.9 µs\tCPU µs/op\tthreads\tIOPS/os\tCPU/os\tvia ring\t\n")
	for _, r := range rs {
		ratio, cpu, ring := "-", "-", "-"
		if b, ok := osBase(rs, r); ok && r.API != APIOS {
			ratio = fmt.Sprintf("%.2f", r.IOPS/b.IOPS)
			if b.CPUUsPerOp > 0 {
				cpu = fmt.Sprintf("%.2f", r.CPUUsPerOp/b.CPUUsPerOp)
			}
		}
		if r.API == APIRingev && r.Ops > 0 {
			ring = fmt.Sprintf("%.0f%%", 100*float64(r.RingOps)/float64(r.Ops))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\t%d\t%s\t%s\t%s\t\n", cacheName(r.Direct), r.Goroutines,
			r.label(), r.IOPS, r.P50Us, r.P99Us, r.P999Us, r.CPUUsPerOp, r.Threads, ratio, cpu, ring)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Reason != "" {
			_, err := fmt.Fprintf(w, "ringev mode: %s\n", r.Reason)
			return err
		}
	}
	return nil
}

// WriteFileJSON prints rs as an indented JSON array, one object per row.
func WriteFileJSON(w io.Writer, rs []FileResult) error {
	if rs == nil {
		rs = []FileResult{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}

// WriteFilePNG draws rs as a grouped bar chart of IOPS in PNG to w: one group per cache mode
// and goroutine count, one bar per API (os.File and each ringev mode).
func WriteFilePNG(w io.Writer, rs []FileResult) error {
	if len(rs) == 0 {
		return errors.New("png: no results")
	}
	type group struct {
		direct bool
		g      int
	}
	var groups []group
	var series []string
	value := map[string]map[group]float64{}
	for _, r := range rs {
		gr := group{r.Direct, r.Goroutines}
		found := false
		for _, x := range groups {
			found = found || x == gr
		}
		if !found {
			groups = append(groups, gr)
		}
		if value[r.label()] == nil {
			value[r.label()] = map[group]float64{}
			series = append(series, r.label())
		}
		value[r.label()][gr] = r.IOPS
	}
	p := plot.New()
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.Title.Text = fmt.Sprintf("ringev bench file: %s %s, IOPS per API", rs[0].RW, formatBytes(int64(rs[0].BS)))
	p.Y.Label.Text = "IOPS (higher is better)"
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(11)
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = "cache, goroutines"
	var names []string
	for _, g := range groups {
		names = append(names, fmt.Sprintf("%s, %d", cacheName(g.direct), g.g))
	}
	peak := 0.0
	var bars []barSeries
	for si, s := range series {
		vals := make(plotter.Values, len(groups))
		for gi, g := range groups {
			vals[gi] = value[s][g]
			peak = max(peak, vals[gi])
		}
		bars = append(bars, barSeries{name: s, color: plotutil.Color(si), values: vals})
	}
	titleWidth := p.Title.TextStyle.Rectangle(p.Title.Text).Size().X
	width := max(rioChartMinWidth, chartAxisRoom+vg.Length(len(groups))*rioChartGroup+2*vg.Inch, titleWidth+vg.Inch)
	return drawBars(w, p, names, bars, peak*rioChartHeadroom, width, 0.7, rioChartMaxBar)
}
