//go:build linux

package bench

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WriteNetPNG draws rs as PNG to w: one panel per protocol (RESP workloads, then HTTP plaintext),
// one group of bars per workload, one bar per server: its CPU µs/request divided by that of the
// panel's reference server (the first server of the panel that is not ringev's, as net.sh lists
// them: redis, nginx), so that workloads whose costs differ tenfold share one axis. The table
// has the absolute figures.
func WriteNetPNG(w io.Writer, rs []NetResult, regime string) error {
	if len(rs) == 0 {
		return errors.New("png: no results to draw")
	}
	var panels []image.Image
	for _, http := range []bool{false, true} {
		var part []NetResult
		for _, r := range rs {
			if strings.HasPrefix(r.Workload, "plaintext") == http {
				part = append(part, r)
			}
		}
		if len(part) == 0 {
			continue
		}
		var buf bytes.Buffer
		if err := netPanel(&buf, part, regime); err != nil {
			return err
		}
		img, err := png.Decode(&buf)
		if err != nil {
			return fmt.Errorf("png: %w", err)
		}
		panels = append(panels, img)
	}
	width, height := 0, 0
	for _, p := range panels {
		width, height = max(width, p.Bounds().Dx()), height+p.Bounds().Dy()
	}
	out := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	y := 0
	for _, p := range panels {
		draw.Draw(out, image.Rect(0, y, p.Bounds().Dx(), y+p.Bounds().Dy()), p, p.Bounds().Min, draw.Src)
		y += p.Bounds().Dy()
	}
	if err := png.Encode(w, out); err != nil {
		return fmt.Errorf("png: encoding: %w", err)
	}
	return nil
}

// netPanel draws one protocol's workloads (rs, all of one protocol) as a grouped bar chart.
func netPanel(w io.Writer, rs []NetResult, regime string) error {
	var workloads, servers []string
	ref := ""
	for _, r := range rs {
		if !slices.Contains(workloads, r.Workload) {
			workloads = append(workloads, r.Workload)
		}
		if !slices.Contains(servers, r.Server) {
			servers = append(servers, r.Server)
		}
		if ref == "" && !IsRingev(r.Server) {
			ref = r.Server
		}
	}
	if ref == "" {
		ref = servers[0]
	}
	base := map[string]float64{}
	for _, r := range rs {
		if r.Server == ref {
			base[r.Workload] = r.CPUUsPerRequest
		}
	}
	peak := 0.0
	var series []barSeries
	for i, s := range servers {
		vals := make(plotter.Values, len(workloads))
		for _, r := range rs {
			if r.Server == s && base[r.Workload] > 0 {
				vals[slices.Index(workloads, r.Workload)] = r.CPUUsPerRequest / base[r.Workload]
				peak = max(peak, vals[slices.Index(workloads, r.Workload)])
			}
		}
		series = append(series, barSeries{name: s, color: plotutil.Color(i), values: vals})
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("ringev bench net (%s): server CPU per request relative to %s\n(lower is better; same workload, medians of rounds)", regime, ref)
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = "CPU µs/request ÷ " + ref + "'s"
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	labels := make([]string, len(workloads)) // "PING_INLINE-c50-P16" as "PING_INLINE" over "P16"
	for i, wl := range workloads {
		labels[i] = strings.NewReplacer("-c50-", "\n", "-c256-", "\n").Replace(wl)
	}
	width := max(chartMinWidth, chartAxisRoom+vg.Length(len(workloads)*len(servers))*chartBarPitch+2.5*vg.Inch)
	return drawBars(w, p, labels, series, peak*1.08, width, 0.8, 0)
}
