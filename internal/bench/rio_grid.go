//go:build linux

package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// RioGrid is the seed's table: every rate × SQ idle time, each for the three
// submission modes. The zero RioGrid means one run of the config as given.
type RioGrid struct {
	// Rates are the RateIOPS values (0: unlimited).
	Rates []int
	// Idles are the SQIdle values (whole milliseconds, the kernel's unit).
	Idles []time.Duration
}

// Empty reports whether g has no rates and no idle times.
func (g RioGrid) Empty() bool { return len(g.Rates) == 0 && len(g.Idles) == 0 }

// ParseRioGrid parses a grid spec such as "rate=200,2000;idle=1,10,100":
// ';'-separated keys rate (I/Os per second, >= 0) and idle (milliseconds,
// >= 0), each with a ','-separated list. A key left out takes the single
// value of the config (RateIOPS, SQIdle) when the grid is run.
func ParseRioGrid(spec string) (RioGrid, error) {
	var g RioGrid
	if strings.TrimSpace(spec) == "" {
		return g, fmt.Errorf("empty grid (want e.g. 'rate=200,2000;idle=1,10,100')")
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ";") {
		key, list, ok := strings.Cut(strings.TrimSpace(part), "=")
		key = strings.TrimSpace(key)
		if !ok || list == "" {
			return g, fmt.Errorf("grid part %q: want key=v1,v2,... with key rate or idle", part)
		}
		if key != "rate" && key != "idle" {
			return g, fmt.Errorf("grid key %q: known keys are rate and idle", key)
		}
		if seen[key] {
			return g, fmt.Errorf("grid key %q given twice", key)
		}
		seen[key] = true
		for _, v := range strings.Split(list, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return g, fmt.Errorf("grid %s value %q: want an integer >= 0", key, v)
			}
			if key == "rate" {
				g.Rates = append(g.Rates, n)
			} else {
				g.Idles = append(g.Idles, time.Duration(n)*time.Millisecond)
			}
		}
	}
	return g, nil
}

// rioRun is one planned run of a grid.
type rioRun struct {
	cfg  RioConfig
	desc string
}

// plan lists the runs of g over cfg: per rate, one run without SQPOLL (it
// does not depend on the idle time), then SQPOLL and SQPOLL + deputy for
// every idle time.
func (g RioGrid) plan(cfg RioConfig) []rioRun {
	if g.Empty() {
		return []rioRun{{cfg, "mode " + modeWords(cfg)}}
	}
	rates, idles := g.Rates, g.Idles
	if len(rates) == 0 {
		rates = []int{cfg.RateIOPS}
	}
	if len(idles) == 0 {
		idles = []time.Duration{cfg.SQIdle}
	}
	n := cfg.Deputy
	if n == 0 {
		n = DefaultRioDeputy
	}
	var runs []rioRun
	for _, rate := range rates {
		c := cfg
		c.RateIOPS, c.SQPoll, c.Deputy = rate, false, 0
		runs = append(runs, rioRun{c, fmt.Sprintf("rate %d, no SQPOLL", rate)})
		for _, idle := range idles {
			c.SQPoll, c.SQIdle, c.Deputy = true, idle, 0
			runs = append(runs, rioRun{c, fmt.Sprintf("rate %d, SQPOLL idle %v", rate, idle)})
			c.Deputy = n
			runs = append(runs, rioRun{c, fmt.Sprintf("rate %d, SQPOLL idle %v, deputy %d", rate, idle, n)})
		}
	}
	return runs
}

// modeWords names cfg's submission mode in words, as the tables do: "no
// SQPOLL", "SQPOLL", "SQPOLL+deputy(N)".
func modeWords(cfg RioConfig) string {
	return RioResult{Mode: cfg.Mode(), Deputy: cfg.Deputy}.modeName()
}

// trialRuntime is the length of the trial run of each mode before the
// measured runs.
const trialRuntime = 5 * time.Millisecond

// trial makes a short unmeasured run of every submission mode of runs on t,
// so that what can fail (io_uring or SQPOLL setup, --cpu, --sq-cpu, O_DIRECT
// or --hipri reads of the file's device) fails before the long part: the
// temporary file's writing and the measured runs.
func trial(runs []rioRun, t *rioTarget) error {
	seen := map[string]bool{}
	for _, r := range runs {
		mode := r.cfg.Mode()
		if seen[mode] {
			continue
		}
		seen[mode] = true
		c := r.cfg
		c.Runtime, c.RateIOPS, c.Progress = trialRuntime, 0, nil
		if _, err := runOne(c, t, nil); err != nil {
			if errors.Is(err, ErrStopped) {
				return err
			}
			return fmt.Errorf("mode %s: %w", modeWords(c), err)
		}
	}
	return nil
}

// trialTarget is the target of the trial runs: for a temporary file, a
// small one of one block in the same directory (on the same device), so that
// a failure costs no 1 GiB write; otherwise the file itself.
func trialTarget(cfg RioConfig) (t *rioTarget, cleanup func(), err error) {
	if cfg.Op != OpRead || cfg.File != "" {
		return openTarget(cfg)
	}
	c := cfg
	c.Size, c.Notes = int64(cfg.BS), nil
	if t, cleanup, err = openTarget(c); err == nil {
		t.path = "a file in " + os.TempDir()
	}
	return t, cleanup, err
}

// RunRioGrid makes every run of g over cfg (one run when g is empty), on one
// file (cfg.File, or one temporary file for all runs, removed at the end),
// and returns the results in plan order: per rate, no SQPOLL, then SQPOLL and
// deputy per idle time. Before the temporary file is written, a short trial
// run of each mode checks what can fail (the ring's setup, SQPOLL, CPU
// pinning, O_DIRECT and IOPOLL reads of the file's device). It stops at the
// first error and returns the results so far with it; closing cfg.Stop ends
// it with an error wrapping ErrStopped.
func RunRioGrid(cfg RioConfig, g RioGrid) ([]RioResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	runs := g.plan(cfg)
	for _, r := range runs {
		if err := r.cfg.Validate(); err != nil {
			return nil, err
		}
	}
	tt, trialCleanup, err := trialTarget(cfg)
	if err != nil {
		return nil, err
	}
	err = trial(runs, tt)
	trialCleanup()
	if err != nil {
		return nil, err
	}
	t, cleanup, err := openTarget(cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	ui := newProgressUI(cfg.Progress, time.Duration(len(runs))*cfg.Runtime)
	defer ui.finish()
	var out []RioResult
	for i, r := range runs {
		prog := ui.begin(fmt.Sprintf("[%d/%d] %s", i+1, len(runs), r.desc), r.cfg.Runtime)
		res, err := runOne(r.cfg, t, prog)
		ui.end()
		if err != nil {
			return out, fmt.Errorf("%s: %w", r.desc, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// progressUI draws one progress bar over all runs (milliseconds of
// runtime), with the current run and its IOPS so far. All methods are no-ops
// without a writer.
type progressUI struct {
	bar  *progressbar.ProgressBar
	done time.Duration // runtime of the finished runs
	stop chan struct{}
	wg   sync.WaitGroup
}

func newProgressUI(w io.Writer, total time.Duration) *progressUI {
	if w == nil {
		return &progressUI{}
	}
	return &progressUI{bar: progressbar.NewOptions64(total.Milliseconds(),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)}
}

// begin starts a run of length runtime and returns the counter it updates.
func (u *progressUI) begin(desc string, runtime time.Duration) *rioProgress {
	if u.bar == nil {
		return nil
	}
	p := &rioProgress{}
	u.stop = make(chan struct{})
	start, base := time.Now(), u.done
	u.done += runtime
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-u.stop:
				return
			case <-tick.C:
				el := min(time.Since(start), runtime)
				u.bar.Describe(fmt.Sprintf("%s: %.0f IOPS", desc, float64(p.ios.Load())/time.Since(start).Seconds()))
				u.bar.Set64((base + el).Milliseconds())
			}
		}
	}()
	return p
}

// end stops the updates of the current run.
func (u *progressUI) end() {
	if u.bar == nil {
		return
	}
	close(u.stop)
	u.wg.Wait()
	u.bar.Set64(u.done.Milliseconds())
}

// finish clears the bar.
func (u *progressUI) finish() {
	if u.bar != nil {
		u.bar.Finish()
		u.bar.Clear()
	}
}
