//go:build linux

package bench

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringev/ringev/internal/kernel"
)

// pngSignature is the eight bytes every PNG file starts with.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// TestWritePipesPNG: the chart of results in several shapes and modes is a valid PNG file of a
// sensible size.
func TestWritePipesPNG(t *testing.T) {
	rs := append(sampleResults(),
		Result{Backend: "uring", Mode: PipesModeAll, Shape: ShapeFdSpeed1, Events: 1000, Seconds: 0.001, EventsPerSec: 1e6},
		Result{Backend: "epoll", Mode: PipesModeFresh, Shape: FdManyShape(100), Fds: 100, Events: 1000, Seconds: 0.004, EventsPerSec: 250000},
	)
	path := filepath.Join(t.TempDir(), "pipes.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePipesPNG(f, rs); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, pngSignature) {
		t.Fatalf("file starts with %q, not the PNG signature", data[:min(8, len(data))])
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a valid PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
		t.Errorf("image is %dx%d, too small to read", b.Dx(), b.Dy())
	}
	if err := WritePipesPNG(&bytes.Buffer{}, nil); err == nil {
		t.Error("no results: no error")
	}
}

// TestPipesTitle: the title names the kernel, the event count and the context duration.
func TestPipesTitle(t *testing.T) {
	title := pipesTitle(sampleResults())
	for _, want := range []string{"Linux " + kernel.Release(), "1,000 events per run", "context 2 s"} {
		if !strings.Contains(title, want) {
			t.Errorf("title %q lacks %q", title, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -12345: "-12,345"} {
		if got := groupThousands(n); got != want {
			t.Errorf("groupThousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestStepTicks: ticks at 1, 2 or 5 × 10^k, at most ten, covering the range, plainly labelled.
func TestStepTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 216, "0 50 100 150 200"},
		{0, 180, "0 20 40 60 80 100 120 140 160 180"},
		{0, 0.54, "0.0 0.1 0.2 0.3 0.4 0.5"},
		{0, 1, "0.0 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0"},
	} {
		var got []string
		for _, tk := range (stepTicks{}).Ticks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("Ticks(%v, %v) = %q, want %q", tc.lo, tc.hi, strings.Join(got, " "), tc.want)
		}
	}
	if ticks := (stepTicks{}).Ticks(1, 1); ticks != nil {
		t.Errorf("empty range: %v", ticks)
	}
}
