//go:build linux

package bench

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
	"gonum.org/v1/plot/vg"
)

// quickRio is a short nop run config.
func quickRio() RioConfig {
	c := DefaultRioConfig()
	c.Op, c.Runtime = OpNop, 300*time.Millisecond
	return c
}

// TestRioScheduleLinear: the linear limiter issues I/O i at exactly i/rate s.
func TestRioScheduleLinear(t *testing.T) {
	s, err := newRioSchedule(3000, RateLinear, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 1_000_000; i++ {
		if got, want := s.next(), i*1_000_000_000/3000; got != want {
			t.Fatalf("I/O %d at %d ns, want %d", i, got, want)
		}
	}
}

// TestRioSchedulePoisson: Poisson gaps have mean 1/rate (within 2%) and the
// exponential's standard deviation (= mean, within 5%).
func TestRioSchedulePoisson(t *testing.T) {
	const rate, n = 2000, 200_000
	s, err := newRioSchedule(rate, RatePoisson, 42)
	if err != nil {
		t.Fatal(err)
	}
	var prev, sum, sumSq float64
	for range n {
		t := float64(s.next())
		g := t - prev
		prev = t
		sum += g
		sumSq += g * g
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	want := 1e9 / rate
	if math.Abs(mean-want)/want > 0.02 {
		t.Errorf("mean gap %.0f ns, want %.0f ± 2%%", mean, want)
	}
	if math.Abs(sd-want)/want > 0.05 {
		t.Errorf("gap standard deviation %.0f ns, want %.0f ± 5%%", sd, want)
	}
	if _, err := newRioSchedule(rate, "bursty", 1); err == nil {
		t.Error("unknown rate process accepted")
	}
}

// TestRioRateLimitsTheIssueRate: a 1 s run at 4000 IOPS issues no more I/Os than its schedule
// makes due in that second (4000), and not a fraction of them: an unlimited run issues
// millions of NOPs, a limiter that waits a whole gap per I/O far fewer. How close to 4000 it
// gets depends on the CPU the machine leaves it (a loaded machine delays the last ones past the
// end); the schedule's exact times are TestRioScheduleLinear's.
func TestRioRateLimitsTheIssueRate(t *testing.T) {
	cfg := quickRio()
	cfg.RateIOPS, cfg.Runtime = 4000, time.Second
	r, err := RunRio(cfg)
	testutil.SkipIfIOUringUnavailable(t, err, rioWhat(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if r.IOs > 4000 || r.IOs < 2000 {
		t.Errorf("%d I/Os in a 1 s run at 4000 IOPS (%.3f s with the drain), want 2000..4000", r.IOs, r.Seconds)
	}
	if r.Total.Count != r.IOs || r.Submission.Count != r.IOs {
		t.Errorf("histogram counts %d/%d, want %d", r.Total.Count, r.Submission.Count, r.IOs)
	}
}

// TestSummarizeMatchesSyntheticDistribution: percentiles of a uniform and an
// exponential distribution match their quantile functions within the HDR
// histogram's precision (3 significant digits).
func TestSummarizeMatchesSyntheticDistribution(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want)/want > 0.002 {
			t.Errorf("%s = %.3f µs, want %.3f µs ± 0.2%%", name, got, want)
		}
	}
	h := newHist()
	for v := int64(1); v <= 1_000_000; v++ { // uniform 1 ns .. 1 ms
		h.RecordValue(v)
	}
	l := summarize(h)
	near("uniform mean", l.MeanUs, 500)
	near("uniform p50", l.P50Us, 500)
	near("uniform p90", l.P90Us, 900)
	near("uniform p99", l.P99Us, 990)
	near("uniform p99.9", l.P999Us, 999)
	near("uniform max", l.MaxUs, 1000)
	if l.Count != 1_000_000 {
		t.Errorf("count %d", l.Count)
	}

	const n, meanNs = 200_000, 100_000.0 // exponential, mean 100 µs
	h = newHist()
	for i := range n {
		h.RecordValue(int64(-meanNs * math.Log(1-(float64(i)+0.5)/n)))
	}
	l = summarize(h)
	q := func(p float64) float64 { return -meanNs * math.Log(1-p) / 1e3 }
	near("exponential mean", l.MeanUs, 100)
	near("exponential p50", l.P50Us, q(0.5))
	near("exponential p90", l.P90Us, q(0.9))
	near("exponential p99", l.P99Us, q(0.99))
	near("exponential p99.9", l.P999Us, q(0.999))
}

// TestRioValidate: bad values are rejected with the field's name.
func TestRioValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*RioConfig)
		want string
	}{
		{"op", func(c *RioConfig) { c.Op = "write" }, "op"},
		{"bs zero", func(c *RioConfig) { c.BS = 0 }, "bs"},
		{"bs unaligned direct", func(c *RioConfig) { c.BS = 1000 }, "O_DIRECT"},
		{"iodepth", func(c *RioConfig) { c.IODepth = 0 }, "iodepth"},
		{"iodepth big", func(c *RioConfig) { c.IODepth = MaxRioIODepth + 1 }, "iodepth"},
		{"rate", func(c *RioConfig) { c.RateIOPS = -1 }, "rate-iops"},
		{"process", func(c *RioConfig) { c.RateProcess = "bursty" }, "rate-process"},
		{"runtime", func(c *RioConfig) { c.Runtime = 0 }, "runtime"},
		{"deputy without sqpoll", func(c *RioConfig) { c.Deputy = 4 }, "sqpoll"},
		{"hipri buffered", func(c *RioConfig) { c.HiPri, c.Direct = true, false }, "O_DIRECT"},
		{"size", func(c *RioConfig) { c.Size = 100 }, "smaller than bs"},
	} {
		c := DefaultRioConfig()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if err := DefaultRioConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestRioFileErrors: a missing file and a file smaller than bs give clear errors.
func TestRioFileErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultRioConfig()
	cfg.Runtime = 100 * time.Millisecond
	cfg.File = filepath.Join(dir, "missing")
	if _, err := RunRio(cfg); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), cfg.File) {
		t.Errorf("missing file: %v, want a not-exist error naming the file", err)
	}
	cfg.File = filepath.Join(dir, "small")
	if err := os.WriteFile(cfg.File, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RunRio(cfg); err == nil || !strings.Contains(err.Error(), "smaller than bs 4096") {
		t.Errorf("small file: %v, want 'smaller than bs 4096'", err)
	}
}

// TestRioReadsTempFile: reads of a temporary file, O_DIRECT and through the
// page cache, complete; the file is removed afterwards.
func TestRioReadsTempFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	for _, direct := range []bool{true, false} {
		cfg := DefaultRioConfig()
		cfg.Size, cfg.Runtime, cfg.Direct, cfg.IODepth, cfg.RateIOPS = 4<<20, 200*time.Millisecond, direct, 16, 2000
		r, err := RunRio(cfg)
		testutil.SkipIfIOUringUnavailable(t, err, rioWhat(cfg))
		if err != nil && direct && strings.Contains(err.Error(), "O_DIRECT not supported here") {
			t.Logf("O_DIRECT unsupported in %s: %v", dir, err)
			continue
		}
		if err != nil {
			t.Fatalf("direct %v: %v", direct, err)
		}
		// Reads completed: how many in 200 ms depends on the machine's load (a busy machine
		// made 150 of the 400 due), which a test must not assert.
		if r.IOs < 1 || r.MiBPerSec <= 0 || r.Total.P50Us <= 0 {
			t.Errorf("direct %v: %d I/Os, %.2f MiB/s, p50 %.1f µs", direct, r.IOs, r.MiBPerSec, r.Total.P50Us)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("temporary files left in %s: %v", dir, ents)
	}
}

// TestRioSQPollModes: SQPOLL and SQPOLL + deputy runs complete, report the SQ
// thread's CPU time, and the deputy submits while the thread sleeps.
func TestRioSQPollModes(t *testing.T) {
	cfg := quickRio()
	cfg.SQPoll, cfg.SQIdle, cfg.RateIOPS = true, time.Millisecond, 100
	g := RioGrid{Rates: []int{100}, Idles: []time.Duration{time.Millisecond}}
	rs, err := RunRioGrid(cfg, g)
	testutil.SkipIfIOUringUnavailable(t, err, rioWhat(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d results, want 3 (none, sqpoll, deputy)", len(rs))
	}
	for i, mode := range []string{ModeNoSQPoll, ModeSQPoll, ModeDeputy} {
		r := rs[i]
		if r.Mode != mode || r.IOs < 20 {
			t.Errorf("result %d: mode %s, %d I/Os; want %s", i, r.Mode, r.IOs, mode)
		}
		if (mode == ModeNoSQPoll) != (r.CPU.SQThreadS < 0) {
			t.Errorf("%s: SQ thread CPU %.3f s", mode, r.CPU.SQThreadS)
		}
	}
	if d := rs[2]; d.DeputySQEs == 0 || d.SubmitsAsleep == 0 {
		t.Errorf("deputy: %d SQEs by the deputy, %d submits found the thread asleep (rate 100, idle 1 ms)",
			d.DeputySQEs, d.SubmitsAsleep)
	}
	var b bytes.Buffer
	if err := WriteRioGrid(&b, rs, []string{"p99", "mean"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p99 total latency", "mean total latency", "no SQPOLL", "SQPOLL+deputy(8)", "100×1ms", "CPU"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("grid table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestParseRioGrid: specs and their errors.
func TestParseRioGrid(t *testing.T) {
	g, err := ParseRioGrid("rate=200,2000; idle=1,10,100")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Rates) != 2 || g.Rates[1] != 2000 || len(g.Idles) != 3 || g.Idles[2] != 100*time.Millisecond {
		t.Errorf("parsed %+v", g)
	}
	if n := len(g.plan(DefaultRioConfig())); n != 2*(1+2*3) {
		t.Errorf("plan has %d runs, want 14", n)
	}
	for _, bad := range []string{"", "rate", "rate=", "speed=1", "rate=1;rate=2", "rate=x", "idle=-1"} {
		if _, err := ParseRioGrid(bad); err == nil {
			t.Errorf("ParseRioGrid(%q) accepted", bad)
		}
	}
}

// TestRioReports: the table, JSON and PNG of synthetic results.
func TestRioReports(t *testing.T) {
	lat := RioLatency{Count: 10, MeanUs: 12, P50Us: 10, P90Us: 11, P99Us: 13, P999Us: 15, MaxUs: 20}
	var rs []RioResult
	for _, m := range []struct {
		mode   string
		deputy int
	}{{ModeNoSQPoll, 0}, {ModeSQPoll, 0}, {ModeDeputy, 8}} {
		rs = append(rs, RioResult{Mode: m.mode, Deputy: m.deputy, Op: OpRead, BS: 4096, IODepth: 128, RateIOPS: 2000,
			RateProcess: RateLinear, Direct: true, SQIdleMs: 10, SQCPU: -1, CPUPin: -1, Seconds: 1, IOs: 2000, IOPS: 2000,
			Total: lat, CPU: RioCPU{UserS: 0.1, SysS: 0.2, SQThreadS: -1}})
	}
	var b bytes.Buffer
	if err := WriteRioTable(&b, rs[:1]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read 4.00 KiB O_DIRECT", "2000 IOPS linear", "p99.9", "submission", "30.0% of one core"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteRioJSON(&b, rs); err != nil || !strings.Contains(b.String(), `"p99_us": 13`) {
		t.Errorf("JSON (%v):\n%s", err, b.String())
	}
	var png bytes.Buffer
	if err := WriteRioPNG(&png, rs, "p99", true); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Errorf("PNG: %d bytes, no PNG signature", png.Len())
	}
	if err := WriteRioGrid(&b, rs, []string{"p42"}); err == nil {
		t.Error("unknown statistic accepted")
	}
}

// TestRioStop: closing Stop ends a long run soon, with ErrStopped and the
// temporary file removed; a closed Stop ends the temporary file's writing.
func TestRioStop(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	cfg := DefaultRioConfig()
	cfg.Size, cfg.Runtime, cfg.Direct, cfg.RateIOPS = 1<<20, time.Hour, false, 1 // waits longer than stopPoll
	stop := make(chan struct{})
	cfg.Stop = stop
	time.AfterFunc(200*time.Millisecond, func() { close(stop) })
	start := time.Now()
	_, err := RunRio(cfg)
	testutil.SkipIfIOUringUnavailable(t, err, rioWhat(cfg))
	if !errors.Is(err, ErrStopped) {
		t.Errorf("RunRio: %v, want ErrStopped", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("stopped after %v, want soon after 200 ms", el)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in %s: %v", dir, ents)
	}
	if _, err := createTempFile(64<<20, nil, stop); !errors.Is(err, ErrStopped) {
		t.Errorf("createTempFile with Stop closed: %v, want ErrStopped", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("createTempFile left %v", ents)
	}
}

// TestRioTrialBeforeWriting: a mode whose ring cannot be set up (the SQ
// thread on a CPU that does not exist) fails, named in words, before the
// temporary file is written.
func TestRioTrialBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	cfg := DefaultRioConfig()
	cfg.Size, cfg.Runtime, cfg.Direct = 64<<20, 100*time.Millisecond, false
	var notes bytes.Buffer
	cfg.Notes = &notes
	cfg.SQCPU = 100000
	rs, err := RunRioGrid(cfg, RioGrid{Rates: []int{100}})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skip(err)
	}
	if err == nil || len(rs) != 0 || !strings.HasPrefix(err.Error(), "mode SQPOLL: io_uring setup with SQPOLL") {
		t.Errorf("%d results, %v; want none and 'mode SQPOLL: io_uring setup with SQPOLL ...'", len(rs), err)
	}
	if notes.Len() != 0 {
		t.Errorf("notes %q: the temporary file was written", notes.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in %s: %v", dir, ents)
	}
}

// TestRioPNGSize: both charts decode, at least rioChartMinWidth wide, and a
// title longer than that widens the chart instead of being clipped.
func TestRioPNGSize(t *testing.T) {
	r := RioResult{Mode: ModeNoSQPoll, Op: OpRead, BS: 4096, IODepth: 128, RateIOPS: 2000, RateProcess: RateLinear,
		Direct: true, Total: RioLatency{Count: 1, P50Us: 1, P90Us: 2, P99Us: 3, P999Us: 4, MaxUs: 5}}
	width := func(rs []RioResult, grid bool) int {
		t.Helper()
		var b bytes.Buffer
		if err := WriteRioPNG(&b, rs, "p99", grid); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatal(err)
		}
		return img.Bounds().Dx()
	}
	minPx := int(float64(rioChartMinWidth/vg.Inch) * chartDPI)
	if w := width([]RioResult{r}, false); w < minPx {
		t.Errorf("run chart %d px wide, want >= %d", w, minPx)
	}
	if w := width([]RioResult{r}, true); w < minPx {
		t.Errorf("grid chart %d px wide, want >= %d", w, minPx)
	}
	long := r
	long.IODepth, long.RateIOPS, long.RateProcess, long.HiPri = 32768, 1_000_000_000, RatePoisson+strings.Repeat("x", 80), true
	if w := width([]RioResult{long}, false); w <= minPx+100 {
		t.Errorf("run chart with a long title %d px wide, want it widened past %d", w, minPx)
	}
}

// rioWhat names what a rio run with cfg sets up, for a skip: io_uring, with SQPOLL or not.
func rioWhat(cfg RioConfig) string {
	if cfg.SQPoll {
		return "io_uring with SQPOLL"
	}
	return "io_uring"
}
