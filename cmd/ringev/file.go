//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringev/ringev/fileio"
	"github.com/ringev/ringev/internal/bench"
)

// usageFile is the help text of `ringev bench file`.
const usageFile = `usage: ringev bench file [flags]

fio-style random reads (or writes) of --bs bytes over one file, each goroutine doing one
operation at a time, through ringev's file API (package fileio) and through os.File's
ReadAt/WriteAt driven by the same number of goroutines, in the same run, through the page
cache and with O_DIRECT. Per row: IOPS, p50/p99/p99.9 latency (µs), CPU µs per operation (the
process's user+system time over the row), and the most OS threads seen. Each row runs in a
fresh process, so that threads a row leaves behind do not count against the next; page-cache
rows read the file once before timing.

flags:
  --file PATH          regular file to use (writes overwrite it) (default: a temporary file of
                       --size in --dir, filled with random data and removed afterwards)
  --dir DIR            where the temporary file goes (default $TMPDIR or /tmp)
  --size N             size of the temporary file (default 1g; suffixes k, m, g, t)
  --bs N               bytes per operation (default 4k)
  --rw RW              randread or randwrite (default randread)
  --goroutines N,M     goroutine counts, one set of rows each, 1..65536 (default 1,16,64,256)
  --direct=WHICH       both, true (O_DIRECT only) or false (page cache only), after '=';
                       --direct alone is true (default both)
  --mode LIST          ringev submission modes, comma-separated, each one of
                       %s
                       (default auto: %s where io_uring works, else threads)
  --os                 include the os.File rows (default true; --os=false leaves them out)
  --seconds D          measured time per row: a Go duration or seconds (default 5)
  --rate N             operations per second per row in total, 0 = unlimited (default 0)
  --page-cache-first   ringev reads try the page cache on the caller first (preadv2 RWF_NOWAIT)
                       (default true)
  --sq-idle MS         SQ thread idle time of the SQPOLL modes, milliseconds (default %d)
  --deputy N           deputy submission's N in mode deputy (default %d)
  --seed N             seed of the random offsets (default: random)
  --png FILE           also draw IOPS per cache mode, goroutines and API as a PNG bar chart
  --json               print a JSON array, one object per row (api, goroutines, direct, mode,
                       iops, p50_us, p99_us, cpu_us_per_op, threads, ...), instead of a table

SIGINT or SIGTERM stops the run, removes the temporary file and prints nothing (a note on
stderr says so); the exit status is then 130 or 143.
`

// directFlag is --direct: both, true or false; given alone it is true.
type directFlag struct{ v []bool }

func (d *directFlag) String() string   { return fmt.Sprint(d.v) }
func (d *directFlag) IsBoolFlag() bool { return true }
func (d *directFlag) Set(s string) error {
	switch s {
	case "both":
		d.v = []bool{false, true}
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want both, true or false")
	}
	d.v = []bool{b}
	return nil
}

// fileOptions is the parsed command line of `ringev bench file`.
type fileOptions struct {
	cfg  bench.FileConfig
	png  string
	json bool
}

// parseFile parses the arguments of `ringev bench file`: flag.ErrHelp for --help, a
// *usageError naming the flag for anything it rejects.
func parseFile(args []string) (fileOptions, error) {
	o := fileOptions{cfg: bench.DefaultFileConfig()}
	c := &o.cfg
	fs := newFlagSet("ringev bench file")
	fs.Func("file", "file", nonEmpty(&c.File, "file"))
	fs.Func("dir", "dir", nonEmpty(&c.Dir, "directory"))
	fs.Func("size", "size", func(s string) (err error) { c.Size, err = parseSize(s); return err })
	fs.Func("bs", "bs", blockSize(&c.BS))
	fs.Func("rw", "rw", oneOf(&c.RW, "access pattern", bench.RWRandRead, bench.RWRandWrite))
	fs.Func("goroutines", "list", func(s string) error {
		c.Goroutines = nil
		for _, v := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > 1<<16 {
				return fmt.Errorf("%q: want counts of 1..65536, comma-separated", v)
			}
			c.Goroutines = append(c.Goroutines, n)
		}
		return nil
	})
	direct := &directFlag{v: c.Direct}
	fs.Var(direct, "direct", "direct")
	var modeNames []string
	for _, m := range fileio.Modes() {
		modeNames = append(modeNames, string(m))
	}
	fs.Func("mode", "modes", func(s string) error {
		names, err := splitList(s, modeNames, "mode")
		c.Modes = nil
		for _, n := range names {
			c.Modes = append(c.Modes, fileio.Mode(n))
		}
		return err
	})
	withOS := true
	fs.BoolVar(&withOS, "os", true, "os rows")
	fs.Func("seconds", "seconds", func(s string) (err error) {
		if c.Duration, err = parseRuntime(s); err == nil && c.Duration <= 0 {
			err = errors.New("must be > 0")
		}
		return err
	})
	fs.Func("rate", "rate", intFlag(&c.Rate, 0))
	fs.BoolVar(&c.PageCacheFirst, "page-cache-first", true, "page cache first")
	idleMs := -1
	fs.Func("sq-idle", "ms", intFlag(&idleMs, 0))
	fs.Func("deputy", "N", intFlag(&c.Deputy, 1))
	fs.Func("seed", "seed", func(s string) (err error) {
		c.Seed, err = strconv.ParseUint(s, 10, 64)
		if err != nil {
			return errors.New("want an unsigned integer")
		}
		return nil
	})
	fs.StringVar(&o.png, "png", "", "png")
	fs.BoolVar(&o.json, "json", false, "json")
	if err := parseOnlyFlags(fs, args, "bench file"); err != nil {
		if i := len(args) - fs.NArg(); fs.NArg() > 0 && i > 0 && strings.TrimLeft(args[i-1], "-") == "direct" {
			// --direct alone is true, so a value after a space is an argument.
			return o, &usageError{fmt.Sprintf("unexpected argument %q after --direct: --direct takes its value after '=' (--direct=both, --direct=true or --direct=false)", fs.Arg(0))}
		}
		return o, err
	}
	c.Direct, c.NoOS = direct.v, !withOS
	if idleMs >= 0 {
		c.SQIdle = time.Duration(idleMs) * time.Millisecond
		if c.SQIdle == 0 {
			c.SQIdle = time.Nanosecond // the kernel's default (1 s)
		}
	}
	if err := c.Validate(); err != nil {
		return o, &usageError{"--" + err.Error()}
	}
	return o, nil
}

// runFile is `ringev bench file`: it returns the exit status (0 ok, 1 the measurement failed,
// 2 bad command line, 130 or 143 after SIGINT or SIGTERM).
func runFile(args []string, stdout, stderr io.Writer) int {
	o, err := parseFile(args)
	if err != nil {
		var modes []string
		for _, m := range fileio.Modes() {
			modes = append(modes, string(m))
		}
		usage := fmt.Sprintf(usageFile, strings.Join(modes, ", "), fileio.ModeDefault,
			fileio.DefaultSQIdle.Milliseconds(), fileio.DefaultDeputy)
		return badArgs("ringev bench file", usage, err, stdout, stderr)
	}
	png, ok := createPNG("ringev bench file", o.png, stderr)
	if !ok {
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		png.discard()
		fmt.Fprintf(stderr, "ringev bench file: finding this program to run each row in: %v\n", err)
		return 1
	}
	o.cfg.RunRow = bench.ExecFileRow(exe)
	o.cfg.Notes = stderr
	if isTerminal(stderr) {
		o.cfg.Progress = stderr
	}
	stop, caught := notifyStop(syscall.SIGINT, syscall.SIGTERM)
	o.cfg.Stop = stop
	results, runErr := bench.RunFile(o.cfg)
	if sig := caught(); sig != nil {
		png.discard()
		what := "the run was stopped"
		if o.cfg.File == "" {
			what += " and its temporary file removed"
		}
		fmt.Fprintf(stderr, "ringev bench file: interrupted by %s: %s\n", signalName(sig), what)
		return 128 + int(sig.(syscall.Signal))
	}
	if len(results) > 0 {
		var werr error
		if o.json {
			werr = bench.WriteFileJSON(stdout, results)
		} else {
			werr = bench.WriteFileTable(stdout, results)
		}
		if werr != nil {
			fmt.Fprintf(stderr, "ringev bench file: writing the results: %v\n", werr)
			return 1
		}
	}
	return finishRun("ringev bench file", png, len(results),
		func(w io.Writer) error { return bench.WriteFilePNG(w, results) }, runErr, stderr)
}

var _ flag.Value = (*directFlag)(nil)
