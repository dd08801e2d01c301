//go:build linux

// Command ringev holds ringev's measuring tools.
//
//	ringev bench pipes [--backend a,b] [--shape s,t] [--fds N,M] [--busy N,M] [--mode m,n]
//	                   [--events N] [--json] [--png FILE]
//	ringev bench rio [flags]
//	ringev bench file [flags]
//	ringev bench net [flags]
//	ringev probe [--json]
//	ringev serve resp|http|echo [flags]
//	ringev help COMMAND
//
// Exit status: 0 on success (and for --help), 1 when a measurement fails, 2 for a bad command
// line, 130 or 143 when SIGINT or SIGTERM stopped a benchmark.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ringev/ringev/internal/bench"
)

const usageTop = `usage: ringev <command> [arguments]

commands:
  bench pipes   tevent's pipe benchmark shapes on every backend and the Go netpoller
  bench rio     fio-style random-read latency over ringev's io_uring binding
  bench file    random reads or writes through ringev's file API against os.File
  bench net     ringev's servers against redis-server, nginx, gnet... with real clients
  probe         what this kernel's io_uring supports
  serve         a RESP, HTTP or echo server on the loop (see 'ringev serve --help')
  help CMD      the help of a command, e.g. 'ringev help bench rio'

Run 'ringev COMMAND --help' (e.g. 'ringev bench pipes --help') for a command's flags.
A bad flag gives a message naming it and exit status 2. SIGINT or SIGTERM stops a benchmark,
restores what it changed and exits 130 or 143. How to read the benchmarks: docs/bench.md.
`

const usageBench = `usage: ringev bench <benchmark> [flags]

benchmarks:
  pipes   tevent's pipe benchmark shapes on every backend and the Go netpoller
  rio     fio-style random-read latency over ringev's io_uring binding
  file    random reads or writes through ringev's file API against os.File
  net     ringev's servers against redis-server, nginx, gnet... with real clients

Run 'ringev bench BENCHMARK --help' (e.g. 'ringev bench rio --help') for its flags.
`

// usagePipes is the help text of `ringev bench pipes`; the verbs are filled by pipesUsage.
const usagePipes = `usage: ringev bench pipes [--backend a,b] [--shape s,t] [--fds N,M] [--busy N,M]
                         [--mode m,n] [--registered-files=false] [--events N]
                         [--json] [--png FILE]

Runs the shapes of tevent's pipe benchmark on ringev's backends, each through Loop.Once as
tevent_loop_once does, and the same pipe ping-pong through the Go runtime netpoller; prints
events/sec, ns/event and the ratio to epoll. With no --mode, every backend runs every shape
in the readiness mode (%s), and in fd_speed1 and fd_busy also with the handlers' I/O
as requests (%s, completion I/O as in the C proactor uring_proactor_pipe):
the table shows both models. A completion row's ratio is to epoll's readiness row, the
others' to epoll in the same mode. With --json each result also gives ratio_mode (the mode of
the epoll row divided by), io_path and io_path_reason (the path of the handlers' I/O through
the loop's methods, and why) and cpu_ns_per_event: the loop thread's CPU time per event,
which a busy machine disturbs less than events/s.

flags:
  --backend a,b   backends to measure (default: all of %s);
                  those the kernel rejects are skipped with a note on stderr
  --shape s,t     shapes to run (default: all of %s):
                  context = one pipe's read and write events with signals and a timer,
                  for 2 s (%s has no context shape); its rows also give the
                  signals raised and counted, equal on amd64, where it counts them with
                  WithExactSignals; fd_speed1, fd_speed2, fd_speed3 = one active pipe
                  plus 0, 1 or 2 idle pairs; fd_many and fd_busy: see --fds and --busy
  --fds N,M       pipe counts of the fd_many shape, 1..%d, one run each, named fd_many<N>:
                  N pipes watched, one active (default %s); RLIMIT_NOFILE is raised
                  up to its hard limit for the run and restored afterwards; poll(2) scans
                  every fd per wait, so poll runs the largest counts only when --backend
                  names it
  --busy N,M      pipe counts of the fd_busy shape, 1..` + "%d" + `, one run each, named fd_busy<N>:
                  N pipes, every one active with its reader and writer (default ` + "%s" + `)
  --mode m,n      loop modes of the ringev backends (default: see above): %s = the
                  readiness cache, handlers doing I/O with the loop's methods
                  (read(2)/write(2) by default);
                  %s = the same, handlers making their own read(2)/write(2); %s =
                  WithFreshReadiness; %s = WithDispatchAll; %s = the handlers' I/O always
                  through the ring (WithIOPath("ring"), uring only);
                  ` + "%s" + ` = the handlers' I/O as requests (Loop.Read, Loop.Write), each read
                  submitted before the write that feeds it, so it waits in the kernel;
                  ` + "%s" + ` = the same, each write before its read, which completes at
                  once (on epoll and poll the loop emulates requests); shown as
                  backend/mode (uring/all); the netpoller runs once, in the default mode
  --registered-files=false
                  in the completion modes on uring, leave the pipes out of the ring's
                  registered-file table (Loop.RegisterFile, IOSQE_FIXED_FILE), so that each
                  request makes the kernel look its fd up (default: registered; where the
                  kernel refuses the table, before Linux 5.19, the run goes on unregistered
                  with a note on stderr). A note under the table names the runs without
                  registered pipes; in --json, registered_files is true for the others
  --events N      read events per fd_speed, fd_many and fd_busy run, N > 0 (default %d)
  --json          print a JSON array of results instead of a table
  --png FILE      also draw events/sec per shape, backend and mode as a PNG bar chart
                  (written at the end; an interrupted run leaves FILE as it was)

SIGINT or SIGTERM ends the run in progress, restores RLIMIT_NOFILE and removes the fd_many
FIFOs, prints no results (a note on stderr says so) and exits 130 or 143. The table is
printed when every run is done; until then a progress line (runs done of all, the one
running) is drawn on stderr when it is a terminal.
`

func main() {
	// A row of `ringev bench file` runs in a child process of its own.
	if done, status := bench.FileRowChild(os.Stdout, os.Stderr); done {
		os.Exit(status)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return dispatch("ringev: unknown command", usageTop, []command{
		{"bench", runBench},
		{"probe", runProbe},
		{"serve", runServe},
	}, args, stdout, stderr)
}

func runBench(args []string, stdout, stderr io.Writer) int {
	return dispatch("ringev bench: unknown benchmark", usageBench, []command{
		{"pipes", runPipes},
		{"rio", runRio},
		{"file", runFile},
		{"net", runBenchNet},
	}, args, stdout, stderr)
}

// command is a subcommand: its name and what runs it (returning the exit status).
type command struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) int
}

// dispatch runs the command of cmds named by args[0] with the rest of args. No argument prints
// usage to stderr (status 2); -h, -help and --help print it to stdout (status 0); `help NAME
// ...` is `NAME ... --help`; an unknown name is unknown (its message, then usage; status 2).
func dispatch(unknown, usage string, cmds []command, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		return dispatch(unknown, usage, cmds, append(slices.Clone(args[1:]), "--help"), stdout, stderr)
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") {
		name, noun, _ := strings.Cut(unknown, ": unknown ")
		fmt.Fprintf(stderr, "%s: %q is not a %s: a flag goes after the %s (e.g. '%s %s --help')\n\n%s",
			name, args[0], noun, noun, name, cmds[len(cmds)-1].name, usage)
		return 2
	}
	fmt.Fprintf(stderr, "%s %q\n\n%s", unknown, args[0], usage)
	return 2
}

// usageError is a bad command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// badArgs answers a command line that cmd's parser refused: its usage on stdout for -h/--help
// (status 0), else the error on stderr (status 2 for a usage error, see exitStatus).
func badArgs(cmd, usage string, err error, stdout, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd, err, cmd)
	return exitStatus(err)
}

// pngOut is the chart file of --png. It is opened before measuring, so that a bad path fails at
// once, but neither truncated nor written until the results are there; if the run fails or is
// interrupted, discard leaves a file that existed as it was and removes one created for the run.
type pngOut struct {
	f       *os.File
	created bool
}

// createPNG opens (creating if missing) the chart file of --png (path; "" for none: nil, true);
// false after reporting why it could not.
func createPNG(cmd, path string, stderr io.Writer) (*pngOut, bool) {
	if path == "" {
		return nil, true
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --png: %v\n", cmd, err)
		return nil, false
	}
	return &pngOut{f: f, created: errors.Is(statErr, fs.ErrNotExist)}, true
}

// discard closes the file and removes it if the run created it. nil-safe.
func (p *pngOut) discard() {
	if p == nil {
		return
	}
	p.f.Close()
	if p.created {
		os.Remove(p.f.Name())
	}
}

// write replaces the file with what draw writes: draw writes a temporary file in the same
// directory, which is renamed over the chart file only when complete, so a failing draw leaves
// an existing file as it was.
func (p *pngOut) write(draw func(io.Writer) error) error {
	name := p.f.Name()
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		p.discard()
		return err
	}
	err = draw(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		p.discard()
		return fmt.Errorf("%s: %w", name, err)
	}
	p.f.Close()
	return nil
}

// finishRun ends a benchmark command cmd whose run returned n results and runErr: it draws the
// chart of --png (nothing, and no file left behind, when there are no results) and reports the
// run's error. It returns the exit status: 1 when the run failed or a chart with results could not
// be written, else 0.
func finishRun(cmd string, png *pngOut, n int, draw func(io.Writer) error, runErr error, stderr io.Writer) int {
	if png != nil && n == 0 { // the run failed at once: no chart, and no empty file
		png.discard()
	} else if png != nil {
		if err := png.write(draw); err != nil {
			fmt.Fprintf(stderr, "%s: --png: %v\n", cmd, err)
			if runErr == nil {
				return 1
			}
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, runErr)
		return 1
	}
	return 0
}

// exitStatus maps an error to the exit status: 0 for nil and flag.ErrHelp, 2 for a usageError,
// 1 for anything else.
func exitStatus(err error) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// pipesOptions is the parsed command line of `ringev bench pipes`.
type pipesOptions struct {
	backends []string // empty: all
	shapes   []string // empty: all
	fds      []int    // empty: bench.DefaultFds
	busy     []int    // empty: bench.DefaultBusy
	modes    []string // empty: the default mode
	unreg    bool     // --registered-files=false
	events   int64
	json     bool
	png      string // "": no chart
}

// pipesUsage returns the help text of `ringev bench pipes`.
func pipesUsage() string {
	return fmt.Sprintf(usagePipes, bench.PipesModeDefault, bench.DefaultCompletionMode, strings.Join(bench.Backends(), ","), strings.Join(bench.Shapes(), ","),
		bench.Netpoller, bench.MaxFds, joinInts(bench.DefaultFds), bench.MaxBusy, joinInts(bench.DefaultBusy),
		bench.PipesModeDefault, bench.PipesModeSyscall, bench.PipesModeFresh, bench.PipesModeAll, bench.PipesModeRing,
		bench.PipesModeCompletion, bench.PipesModeCompletionInline, bench.DefaultEvents)
}

// joinInts formats ns as "1,100,10000".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// parsePipes parses the arguments of `ringev bench pipes`. It returns flag.ErrHelp for -h/--help,
// and a *usageError naming the flag and the bad value for anything it rejects.
func parsePipes(args []string) (pipesOptions, error) {
	o := pipesOptions{events: bench.DefaultEvents}
	fs := newFlagSet("ringev bench pipes")
	fs.Func("backend", "comma-separated backends", func(s string) error {
		names, err := splitList(s, bench.Backends(), "backend")
		o.backends = append(o.backends, names...)
		return err
	})
	fs.Func("shape", "comma-separated shapes", func(s string) error {
		names, err := splitList(s, bench.Shapes(), "shape")
		o.shapes = append(o.shapes, names...)
		return err
	})
	fs.Func("fds", "pipe counts of fd_many", func(s string) error {
		for _, f := range strings.Split(s, ",") {
			n, err := parseCount(strings.TrimSpace(f))
			if err == nil && n > bench.MaxFds {
				err = fmt.Errorf("must be <= %d", bench.MaxFds)
			}
			if err != nil {
				return fmt.Errorf("pipe count %q: %w", strings.TrimSpace(f), err)
			}
			if !slices.Contains(o.fds, int(n)) {
				o.fds = append(o.fds, int(n))
			}
		}
		return nil
	})
	fs.Func("busy", "pipe counts of fd_busy", func(s string) error { return parseBusy(s, &o.busy) })
	fs.Func("mode", "comma-separated loop modes", func(s string) error {
		names, err := splitList(s, bench.PipesModes(), "mode")
		for _, n := range names {
			if !slices.Contains(o.modes, n) {
				o.modes = append(o.modes, n)
			}
		}
		return err
	})
	fs.Func("events", "read events per fd_speed run", func(s string) error {
		n, err := parseCount(s)
		if err != nil {
			return err
		}
		o.events = n
		return nil
	})
	fs.BoolFunc("registered-files", "register the pipes in completion modes", func(s string) error {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("want true or false")
		}
		o.unreg = !v
		return nil
	})
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.Func("png", "PNG chart file", nonEmpty(&o.png, "file"))
	if err := parseOnlyFlags(fs, args, "bench pipes"); err != nil {
		return o, err
	}
	if len(o.fds) > 0 && len(o.shapes) > 0 && !slices.Contains(o.shapes, bench.ShapeFdMany) {
		return o, &usageError{fmt.Sprintf("--fds %s: only the %s shape uses it, and --shape does not select it",
			joinInts(o.fds), bench.ShapeFdMany)}
	}
	// Combinations that measure nothing at all, whatever the kernel: a usage error, not a run
	// whose every combination is skipped.
	if len(o.backends) > 0 && len(o.modes) > 0 && !slices.ContainsFunc(o.modes, func(m string) bool { return m != bench.PipesModeRing }) &&
		!slices.Contains(o.backends, "uring") && !slices.Contains(o.backends, bench.Netpoller) {
		return o, &usageError{fmt.Sprintf("--mode %s: only the uring backend has a ring, and --backend %s does not select it",
			bench.PipesModeRing, strings.Join(o.backends, ","))}
	}
	if len(o.shapes) > 0 && !slices.ContainsFunc(o.shapes, func(s string) bool { return s != bench.ShapeContext }) &&
		len(o.backends) > 0 && !slices.ContainsFunc(o.backends, func(b string) bool { return b != bench.Netpoller }) {
		return o, &usageError{fmt.Sprintf("--shape %s: %s has none (a goroutine ping-pong has no signals or timer); select a ringev backend or another shape",
			bench.ShapeContext, bench.Netpoller)}
	}
	if len(o.busy) > 0 && len(o.shapes) > 0 && !slices.Contains(o.shapes, bench.ShapeFdBusy) {
		return o, &usageError{fmt.Sprintf("--busy %s: only the %s shape uses it, and --shape does not select it",
			joinInts(o.busy), bench.ShapeFdBusy)}
	}
	return o, nil
}

// parseCount parses a decimal integer > 0.
func parseCount(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, errors.New("out of range")
		}
		return 0, errors.New("not an integer")
	}
	if n <= 0 {
		return 0, errors.New("must be > 0")
	}
	return n, nil
}

// newFlagSet is a flag set for a subcommand: errors are returned, usage is printed by the caller.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs: flag.ErrHelp for -h/--help, a *usageError for anything else
// it rejects.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{doubleDash(err.Error())}
	}
	return nil
}

// parseOnlyFlags is parseFlags for the subcommand cmd ("bench net"), which takes no arguments
// but flags: one left over is a *usageError naming it.
func parseOnlyFlags(fs *flag.FlagSet, args []string, cmd string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		if flag := boolFlagBefore(fs, args); flag != "" {
			return &usageError{fmt.Sprintf("unexpected argument %q after --%s: a boolean flag takes its value after '=' (--%s=%s)",
				fs.Arg(0), flag, flag, fs.Arg(0))}
		}
		return &usageError{fmt.Sprintf("unexpected argument %q: %s takes only flags", fs.Arg(0), cmd)}
	}
	return nil
}

// boolFlagBefore returns the name of the boolean flag given without a value (--json) right
// before fs's first argument when that argument is a boolean value (--json false: the flag
// package reads "false" as an argument), else "".
func boolFlagBefore(fs *flag.FlagSet, args []string) string {
	i := len(args) - fs.NArg() // fs.Args() is the tail of args
	if i < 1 || i > len(args) {
		return ""
	}
	if _, err := strconv.ParseBool(fs.Arg(0)); err != nil {
		return ""
	}
	prev := args[i-1]
	name := strings.TrimPrefix(strings.TrimPrefix(prev, "-"), "-")
	if name == prev || name == "" || strings.Contains(name, "=") {
		return ""
	}
	f := fs.Lookup(name)
	if f == nil {
		return ""
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
		return ""
	}
	return name
}

// nonEmpty is a flag.Func that sets *dst to a value that is not empty ("empty <what> name").
func nonEmpty(dst *string, what string) func(string) error {
	return func(s string) error {
		if s == "" {
			return fmt.Errorf("empty %s name", what)
		}
		*dst = s
		return nil
	}
}

// oneOf is a flag.Func that sets *dst to one of known (`unknown <what> "x" (known: a, b)`).
func oneOf(dst *string, what string, known ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(known, s) {
			return fmt.Errorf("unknown %s %q (known: %s)", what, s, strings.Join(known, ", "))
		}
		*dst = s
		return nil
	}
}

// doubleDash rewrites the flag package's messages, which name a flag with one dash, to the two
// dashes the usage text uses.
func doubleDash(msg string) string {
	for _, p := range []string{"for flag -", "for -", "defined: -", "argument: -"} {
		if i := strings.Index(msg, p); i >= 0 {
			return msg[:i+len(p)] + "-" + msg[i+len(p):]
		}
	}
	return msg
}

// splitList splits a comma-separated list and checks every name against known.
func splitList(s string, known []string, what string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("empty %s name (known: %s)", what, strings.Join(known, ", "))
		}
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", what, n, strings.Join(known, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func runPipes(args []string, stdout, stderr io.Writer) int {
	o, err := parsePipes(args)
	if err != nil {
		return badArgs("ringev bench pipes", pipesUsage(), err, stdout, stderr)
	}
	png, ok := createPNG("ringev bench pipes", o.png, stderr)
	if !ok {
		return 1
	}
	// SIGINT and SIGTERM end the run in progress and skip the rest; the fd_many FIFOs and
	// RLIMIT_NOFILE are restored on the way out.
	stop, caught := notifyStop(syscall.SIGINT, syscall.SIGTERM)
	results, runErr := bench.Run(bench.Config{
		Backends: o.backends,
		Shapes:   o.shapes,
		Fds:      o.fds,
		Busy:     o.busy,
		Modes:    o.modes,
		Options:  bench.Options{Events: o.events, Stop: stop, UnregisteredFiles: o.unreg},
		Notes:    stderr,
		Progress: progressTo(stderr),
	})
	if sig := caught(); sig != nil {
		png.discard()
		fmt.Fprintf(stderr, "ringev bench pipes: interrupted by %s: nothing written\n", signalName(sig))
		return 128 + int(sig.(syscall.Signal))
	}
	if png != nil && len(results) == 0 {
		png.discard()
	} else if png != nil {
		if err := png.write(func(w io.Writer) error { return bench.WritePipesPNG(w, results) }); err != nil {
			fmt.Fprintf(stderr, "ringev bench pipes: --png: %v\n", err)
			if runErr == nil {
				runErr = err
			}
		}
	}
	if len(results) > 0 {
		var werr error
		if o.json {
			werr = bench.WriteJSON(stdout, results)
		} else {
			werr = writePipesTable(stdout, results)
		}
		if werr != nil {
			fmt.Fprintf(stderr, "ringev bench pipes: writing the results: %v\n", werr)
			return 1
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "ringev bench pipes: %v\n", runErr)
		return 1
	}
	return 0
}

// signalsNote explains the table's "signals raised N, counted M" lines, once.
const signalsNote = `(signals counted < raised: this run went through os/signal, where the Go runtime merges a
signal raised again before its signal goroutine took the first; ringev.WithExactSignals counts them all)
`

// writePipesTable prints the results' table and, when a context run counted fewer signals than
// it raised, signalsNote under it.
func writePipesTable(w io.Writer, results []bench.Result) error {
	if err := bench.WriteTable(w, results); err != nil {
		return err
	}
	for _, r := range results {
		if r.SignalsCounted < r.SignalsRaised {
			_, err := fmt.Fprint(w, signalsNote)
			return err
		}
	}
	return nil
}

// parseBusy parses one --busy value, a comma-separated list of fd_busy pipe counts in
// [1, bench.MaxBusy], appending the new ones to counts; the error names the bad count.
func parseBusy(s string, counts *[]int) error {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := parseCount(f)
		if err == nil && n > bench.MaxBusy {
			err = fmt.Errorf("must be <= %d", bench.MaxBusy)
		}
		if err != nil {
			return fmt.Errorf("pipe count %q: %w", f, err)
		}
		if !slices.Contains(*counts, int(n)) {
			*counts = append(*counts, int(n))
		}
	}
	return nil
}
