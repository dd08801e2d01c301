//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/ringev/ringev/internal/bench"
)

// usageRio is the help text of `ringev bench rio`.
const usageRio = `usage: ringev bench rio [flags]

fio-style random-read latency over ringev's io_uring binding: reads of --bs bytes at random
aligned offsets, at most --iodepth in flight, issued at --rate-iops; reports IOPS, bandwidth,
submission / completion / total latency (mean, p50, p90, p99, p99.9, max, from an HDR
histogram) and the CPU time of the process and of the SQ thread.

flags:
  --file PATH          file or block device to read (default: a temporary file of --size,
                       created in $TMPDIR and removed afterwards)
  --size N             size of the temporary file (default 1g; suffixes k, m, g, t: powers of 1024)
  --bs N               bytes per read (default 4k)
  --iodepth N          reads in flight at most, 1..32768 (default 128)
  --rate-iops N        issue rate in I/Os per second, 0 = unlimited (default 0)
  --rate-process P     linear or poisson (default linear)
  --direct             O_DIRECT (default true; --direct=false reads through the page cache)
  --op OP              read, or nop (IORING_OP_NOP: the ring alone, no file) (default read)
  --runtime D          how long to issue I/O: a Go duration or seconds (default 10s)
  --sqpoll             submit through an SQPOLL kernel thread
  --sq-idle MS         SQ thread idle time before it sleeps, milliseconds (the kernel's unit);
                       0 = the kernel's default of 1 s (default 0)
  --sq-cpu N           pin the SQ thread to CPU N (default: not pinned)
  --cpu N              pin the submitting thread to CPU N (fio's cpus_allowed; default: not pinned)
  --deputy N           deputy submission: while the SQ thread sleeps, submit up to N SQEs in
                       our own context, then wake it (needs --sqpoll; default 0 = off)
  --hipri              IOPOLL: busy-poll completions (needs --direct and a device with poll queues)
  --grid SPEC          run every rate × idle, e.g. 'rate=200,2000;idle=1,10,100', for the three
                       modes (no SQPOLL, SQPOLL, SQPOLL + deputy N, N = --deputy or %d) and
                       print tables: rows = mode, columns = rate × idle
  --stat LIST          grid statistics of total latency, comma-separated, of %s
                       (default p99)
  --png FILE           also draw the results (the grid's first --stat, or a run's
                       percentiles) as a PNG bar chart
  --json               print JSON instead of tables

Before the temporary file is written, a short trial run of each mode checks what can fail (io_uring
and SQPOLL setup, --cpu, --sq-cpu, O_DIRECT and --hipri reads on the file's device). A progress
line is drawn on stderr when it is a terminal. SIGINT or SIGTERM stops the run and removes the
temporary file; the exit status is then 130 or 143.
`

// rioOptions is the parsed command line of `ringev bench rio`.
type rioOptions struct {
	cfg   bench.RioConfig
	grid  bench.RioGrid
	stats []string
	png   string
	json  bool
}

// parseSize parses a byte count with an optional binary suffix: 4096, 4k,
// 4K, 4KiB, 1m, 1g, 1t.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (want e.g. 4096, 4k, 1g)", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: out of range", s)
	}
	return n * mult, nil
}

// parseRuntime accepts a Go duration (10s, 500ms) or a number of seconds.
func parseRuntime(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want e.g. 10s, 500ms or 10)", s)
	}
	return d, nil
}

// blockSize parses a block size for fs.Func: a size (parseSize) of 1 byte .. 1 GiB.
func blockSize(dst *int) func(string) error {
	return func(s string) error {
		n, err := parseSize(s)
		if err == nil && (n <= 0 || n > 1<<30) {
			err = errors.New("must be 1 byte .. 1 GiB")
		}
		*dst = int(n)
		return err
	}
}

// intFlag parses a whole number for fs.Func.
func intFlag(dst *int, min int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return errors.New("not an integer")
		}
		if n < min {
			return fmt.Errorf("must be >= %d", min)
		}
		*dst = n
		return nil
	}
}

// parseRio parses the arguments of `ringev bench rio`. It returns flag.ErrHelp
// for -h/--help and a *usageError naming the flag and the bad value for
// anything it rejects.
func parseRio(args []string) (rioOptions, error) {
	o := rioOptions{cfg: bench.DefaultRioConfig(), stats: []string{"p99"}}
	c := &o.cfg
	fs := newFlagSet("ringev bench rio")
	fs.StringVar(&c.File, "file", "", "file")
	fs.Func("size", "size", func(s string) (err error) { c.Size, err = parseSize(s); return err })
	fs.Func("bs", "bs", blockSize(&c.BS))
	fs.Func("iodepth", "iodepth", intFlag(&c.IODepth, 1))
	fs.Func("rate-iops", "rate", intFlag(&c.RateIOPS, 0))
	fs.Func("rate-process", "process", func(s string) error {
		if s != bench.RateLinear && s != bench.RatePoisson {
			return fmt.Errorf("want %s or %s", bench.RateLinear, bench.RatePoisson)
		}
		c.RateProcess = s
		return nil
	})
	fs.BoolVar(&c.Direct, "direct", true, "O_DIRECT")
	fs.Func("op", "op", func(s string) error {
		if s != bench.OpRead && s != bench.OpNop {
			return fmt.Errorf("want %s or %s", bench.OpRead, bench.OpNop)
		}
		c.Op = s
		return nil
	})
	fs.Func("runtime", "runtime", func(s string) (err error) {
		if c.Runtime, err = parseRuntime(s); err == nil && c.Runtime <= 0 {
			err = errors.New("must be > 0")
		}
		return err
	})
	fs.BoolVar(&c.SQPoll, "sqpoll", false, "SQPOLL")
	var idleMs int
	fs.Func("sq-idle", "ms", intFlag(&idleMs, 0))
	fs.Func("sq-cpu", "cpu", intFlag(&c.SQCPU, 0))
	fs.Func("cpu", "cpu", intFlag(&c.CPU, 0))
	fs.Func("deputy", "N", intFlag(&c.Deputy, 0))
	fs.BoolVar(&c.HiPri, "hipri", false, "IOPOLL")
	var gridSpec, statList string
	fs.StringVar(&gridSpec, "grid", "", "grid")
	fs.StringVar(&statList, "stat", "", "stats")
	fs.StringVar(&o.png, "png", "", "png")
	fs.BoolVar(&o.json, "json", false, "json")
	if err := parseOnlyFlags(fs, args, "bench rio"); err != nil {
		return o, err
	}
	c.SQIdle = time.Duration(idleMs) * time.Millisecond
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if gridSpec != "" {
		g, err := bench.ParseRioGrid(gridSpec)
		if err != nil {
			return o, &usageError{"invalid value for flag --grid: " + err.Error()}
		}
		o.grid = g
	} else {
		for _, f := range []string{"sq-idle", "sq-cpu"} {
			if set[f] && !c.SQPoll {
				return o, &usageError{fmt.Sprintf("--%s needs --sqpoll", f)}
			}
		}
		if set["stat"] {
			return o, &usageError{"--stat needs --grid"}
		}
	}
	if statList != "" {
		o.stats = nil
		for _, s := range strings.Split(statList, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(bench.RioStats(), s) {
				return o, &usageError{fmt.Sprintf("invalid value %q for flag --stat: known: %s", s, strings.Join(bench.RioStats(), ", "))}
			}
			o.stats = append(o.stats, s)
		}
	}
	if c.Deputy > 0 && !c.SQPoll && o.grid.Empty() {
		return o, &usageError{"--deputy needs --sqpoll"}
	}
	if set["file"] && c.File == "" {
		return o, &usageError{"--file: empty path"}
	}
	check := *c
	if !o.grid.Empty() {
		check.Deputy = 0 // the grid sets its own modes
	}
	if err := check.Validate(); err != nil {
		return o, &usageError{"--" + err.Error()}
	}
	return o, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressTo is w for a progress line when w is a terminal, else nil (none drawn).
func progressTo(w io.Writer) io.Writer {
	if isTerminal(w) {
		return w
	}
	return nil
}

// runRio is `ringev bench rio`: it returns the exit status (0 ok, 1 the
// measurement failed, 2 bad command line, 128 + the signal's number when
// SIGINT or SIGTERM ended it: 130, 143).
func runRio(args []string, stdout, stderr io.Writer) int {
	o, err := parseRio(args)
	if err != nil {
		return badArgs("ringev bench rio", fmt.Sprintf(usageRio, bench.DefaultRioDeputy, strings.Join(bench.RioStats(), ", ")),
			err, stdout, stderr)
	}
	png, ok := createPNG("ringev bench rio", o.png, stderr)
	if !ok {
		return 1
	}
	o.cfg.Notes = stderr
	if isTerminal(stderr) {
		o.cfg.Progress = stderr
	}
	// SIGINT and SIGTERM stop the run, which then removes its temporary file.
	stop, caught := notifyStop(syscall.SIGINT, syscall.SIGTERM)
	o.cfg.Stop = stop
	results, runErr := bench.RunRioGrid(o.cfg, o.grid)
	if sig := caught(); sig != nil {
		png.discard()
		what := "the run was stopped"
		if o.cfg.File == "" && o.cfg.Op == bench.OpRead {
			what += " and its temporary file removed"
		}
		fmt.Fprintf(stderr, "ringev bench rio: interrupted by %s: %s\n", signalName(sig), what)
		return 128 + int(sig.(syscall.Signal))
	}
	if len(results) > 0 {
		var werr error
		switch {
		case o.json:
			werr = bench.WriteRioJSON(stdout, results)
		case !o.grid.Empty():
			werr = bench.WriteRioGrid(stdout, results, o.stats)
		default:
			werr = bench.WriteRioTable(stdout, results)
		}
		if werr != nil {
			fmt.Fprintf(stderr, "ringev bench rio: writing the results: %v\n", werr)
			return 1
		}
	}
	return finishRun("ringev bench rio", png, len(results),
		func(w io.Writer) error { return bench.WriteRioPNG(w, results, o.stats[0], !o.grid.Empty()) }, runErr, stderr)
}

// notifyStop catches sigs until caught is called: the first one closes stop.
// caught stops catching and returns the signal caught, or nil.
func notifyStop(sigs ...os.Signal) (stop <-chan struct{}, caught func() os.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	stopCh, done, exited := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var got os.Signal
	go func() {
		defer close(exited)
		select {
		case got = <-ch:
			close(stopCh)
		case <-done:
		}
	}()
	return stopCh, func() os.Signal {
		close(done)
		<-exited
		signal.Stop(ch)
		return got
	}
}

// signalName is "SIGINT" or "SIGTERM" (the names users type), else the
// signal's description.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}
