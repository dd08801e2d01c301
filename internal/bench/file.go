//go:build linux

package bench

// `ringev bench file`: fio-style random reads or writes of BS bytes over one file, from N
// goroutines, through ringev's fileio API and through os.File in the same run, page cache
// and O_DIRECT. Each row runs in a fresh process (FileConfig.RunRow) when the command runs
// it, so that the OS threads a row leaves behind (Go never ends an idle thread) are not
// counted against the next.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
)

// APIs of a file row (FileResult.API).
const (
	APIRingev = "ringev" // fileio.File
	APIOS     = "os"     // os.File
)

// Access patterns of a file run (FileConfig.RW).
const (
	RWRandRead  = "randread"
	RWRandWrite = "randwrite"
)

// Defaults of FileConfig.
const (
	DefaultFileSize     = 1 << 30
	DefaultFileBS       = 4096
	DefaultFileDuration = 5 * time.Second
)

// DefaultFileGoroutines are the goroutine counts of a default run.
var DefaultFileGoroutines = []int{1, 16, 64, 256}

// FileConfig is one `ringev bench file` run. Start from DefaultFileConfig.
type FileConfig struct {
	// File is the file to use; "" creates a temporary file of Size bytes in Dir (filled
	// with random data) and removes it afterwards. Writes overwrite File's contents.
	File string
	// Dir is where the temporary file goes ("": os.TempDir).
	Dir string
	// Size is the temporary file's size in bytes (>= BS).
	Size int64
	// BS is the bytes per operation (> 0; a multiple of 512 for O_DIRECT rows).
	BS int
	// RW is RWRandRead or RWRandWrite.
	RW string
	// Goroutines are the goroutine counts, one set of rows each.
	Goroutines []int
	// Direct lists the cache modes: false reads through the page cache, true with O_DIRECT.
	Direct []bool
	// Modes are the fileio submission modes of the ringev rows (fileio.ModeAuto: the
	// default).
	Modes []fileio.Mode
	// NoOS leaves out the os.File rows.
	NoOS bool
	// Duration is the measured time of each row (--seconds).
	Duration time.Duration
	// Rate limits each row to this many operations per second in total (0: as fast as
	// possible).
	Rate int
	// PageCacheFirst is fileio.WithPageCacheFirst of the ringev rows.
	PageCacheFirst bool
	// SQIdle and Deputy are fileio.WithSQIdle and WithDeputy of the SQPOLL modes (0: the
	// package's defaults).
	SQIdle time.Duration
	Deputy int
	// Seed seeds the offsets (0: random).
	Seed uint64
	// Progress receives a progress bar; Notes one-line notes; nil for none.
	Progress, Notes io.Writer
	// Stop, when closed, ends the run: the row in progress stops, the temporary file is
	// removed, and RunFile returns an error wrapping ErrStopped.
	Stop <-chan struct{}
	// RunRow measures one row; nil measures it in this process (RunFileRow). ExecFileRow
	// runs each row in a fresh process.
	RunRow func(FileRow, <-chan struct{}) (FileResult, error)
}

// DefaultFileConfig returns the defaults of `ringev bench file`: 4 KiB random reads of a 1 GiB
// temporary file from 1, 16, 64 and 256 goroutines, page cache and O_DIRECT, ringev in the
// default mode against os.File, 5 s per row.
func DefaultFileConfig() FileConfig {
	return FileConfig{Size: DefaultFileSize, BS: DefaultFileBS, RW: RWRandRead,
		Goroutines: slices.Clone(DefaultFileGoroutines), Direct: []bool{false, true},
		Modes: []fileio.Mode{fileio.ModeAuto}, Duration: DefaultFileDuration, PageCacheFirst: true}
}

// Validate checks the config's values and returns an error naming the field.
func (c FileConfig) Validate() error {
	switch {
	case c.RW != RWRandRead && c.RW != RWRandWrite:
		return fmt.Errorf("rw %q: must be %s or %s", c.RW, RWRandRead, RWRandWrite)
	case c.BS <= 0 || c.BS > 1<<30:
		return fmt.Errorf("bs %d: must be 1 byte .. 1 GiB", c.BS)
	case slices.Contains(c.Direct, true) && c.BS%512 != 0:
		return fmt.Errorf("bs %d: O_DIRECT needs a multiple of 512 bytes (or --direct=false)", c.BS)
	case len(c.Goroutines) == 0:
		return errors.New("goroutines: none given")
	case len(c.Direct) == 0:
		return errors.New("direct: no cache mode given")
	case len(c.Modes) == 0 && c.NoOS:
		return errors.New("mode: no API to measure")
	case c.Duration <= 0:
		return fmt.Errorf("seconds %v: must be > 0", c.Duration)
	case c.Rate < 0:
		return fmt.Errorf("rate %d: must be >= 0 (0: unlimited)", c.Rate)
	case c.File == "" && c.Size < int64(c.BS):
		return fmt.Errorf("size %d: smaller than bs %d", c.Size, c.BS)
	}
	for _, g := range c.Goroutines {
		if g < 1 || g > 1<<16 {
			return fmt.Errorf("goroutines %d: must be 1..65536", g)
		}
	}
	for _, m := range c.Modes {
		if !slices.Contains(fileio.Modes(), m) {
			return fmt.Errorf("mode %q: known modes are %v", m, fileio.Modes())
		}
	}
	return nil
}

// FileRow is one measured row: the file, the API and its mode, the shape.
type FileRow struct {
	Path           string        `json:"path"`
	BS             int           `json:"bs"`
	RW             string        `json:"rw"`
	API            string        `json:"api"`
	Mode           fileio.Mode   `json:"mode"`
	Goroutines     int           `json:"goroutines"`
	Direct         bool          `json:"direct"`
	Duration       time.Duration `json:"duration"`
	Rate           int           `json:"rate"`
	PageCacheFirst bool          `json:"page_cache_first"`
	SQIdle         time.Duration `json:"sq_idle"`
	Deputy         int           `json:"deputy"`
	Seed           uint64        `json:"seed"`
}

func (r FileRow) describe() string {
	cache := "page cache"
	if r.Direct {
		cache = "O_DIRECT"
	}
	api := "os.File"
	if r.API == APIRingev {
		api = "ringev " + string(r.Mode)
	}
	return fmt.Sprintf("%s %s, %d goroutines, %s", r.RW, cache, r.Goroutines, api)
}

// FileResult is one row's figures.
type FileResult struct {
	API        string  `json:"api"`
	Goroutines int     `json:"goroutines"`
	Direct     bool    `json:"direct"`
	Mode       string  `json:"mode"`
	IOPS       float64 `json:"iops"`
	P50Us      float64 `json:"p50_us"`
	P99Us      float64 `json:"p99_us"`
	P999Us     float64 `json:"p99_9_us"`
	CPUUsPerOp float64 `json:"cpu_us_per_op"`
	// Threads is the most OS threads of the process seen during the row (/proc/self/status,
	// kernel threads of io_uring such as the SQ thread included).
	Threads int     `json:"threads"`
	RW      string  `json:"rw"`
	BS      int     `json:"bs"`
	Rate    int     `json:"rate,omitempty"`
	Seconds float64 `json:"seconds"`
	Ops     int64   `json:"ops"`
	// RingOps is the operations that went through the ring (ringev rows); the others were
	// served from the page cache on the calling goroutine.
	RingOps uint64 `json:"ring_ops,omitempty"`
	// Wakeups is how often a caller woke the ring's owner (ringev rows).
	Wakeups uint64 `json:"wakeups,omitempty"`
	// Reason is the ring's fileio.Ring.Reason (ringev rows in mode auto).
	Reason string `json:"reason,omitempty"`
}

// fileRows plans the rows of cfg on path: per cache mode and goroutine count, os.File first,
// then each ringev mode.
func fileRows(cfg FileConfig, path string, seed uint64) []FileRow {
	var rows []FileRow
	for _, d := range cfg.Direct {
		for _, g := range cfg.Goroutines {
			base := FileRow{Path: path, BS: cfg.BS, RW: cfg.RW, Goroutines: g, Direct: d, Duration: cfg.Duration,
				Rate: cfg.Rate, PageCacheFirst: cfg.PageCacheFirst, SQIdle: cfg.SQIdle, Deputy: cfg.Deputy, Seed: seed}
			if !cfg.NoOS {
				r := base
				r.API = APIOS
				rows = append(rows, r)
			}
			for _, m := range cfg.Modes {
				r := base
				r.API, r.Mode = APIRingev, m
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// RunFile runs every row of cfg on one file (cfg.File, or a temporary file removed at the
// end) and returns the results in plan order. Before the temporary file is written, each
// ringev mode is set up once and O_DIRECT is tried in its directory, so that what can fail
// fails at once. It stops at the first error, returning the results so far.
func RunFile(cfg FileConfig) ([]FileResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := fileTrial(cfg); err != nil {
		return nil, err
	}
	path := cfg.File
	if path == "" {
		var err error
		if path, err = writeTempFile(cfg.Dir, "ringev-file-*.dat", "file", cfg.Size, cfg.Notes, cfg.Stop); err != nil {
			return nil, err
		}
		defer os.Remove(path)
	} else if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--file %s: not a regular file", path)
	} else if st.Size() < int64(cfg.BS) {
		return nil, fmt.Errorf("--file %s is %d bytes, smaller than bs %d", path, st.Size(), cfg.BS)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rows := fileRows(cfg, path, seed)
	runRow := cfg.RunRow
	if runRow == nil {
		runRow = RunFileRow
	}
	ui := newProgressUI(cfg.Progress, time.Duration(len(rows))*cfg.Duration)
	defer ui.finish()
	var out []FileResult
	for i, row := range rows {
		if stopped(cfg.Stop) {
			return out, ErrStopped
		}
		ui.begin(fmt.Sprintf("[%d/%d] %s", i+1, len(rows), row.describe()), row.Duration)
		res, err := runRow(row, cfg.Stop)
		ui.end()
		if err != nil {
			return out, fmt.Errorf("%s: %w", row.describe(), err)
		}
		out = append(out, res)
	}
	return out, nil
}

// fileTrial sets up each ringev mode of cfg once and, for O_DIRECT rows on a temporary file,
// opens a small file with O_DIRECT in its directory.
func fileTrial(cfg FileConfig) error {
	for _, m := range cfg.Modes {
		r, err := fileio.NewRing(ringOptions(m, cfg.SQIdle, cfg.Deputy, cfg.PageCacheFirst)...)
		if err != nil {
			return fmt.Errorf("mode %s: %w", m, err)
		}
		r.Close()
	}
	if !slices.Contains(cfg.Direct, true) {
		return nil
	}
	path := cfg.File
	if path == "" {
		f, err := os.CreateTemp(cfg.Dir, "ringev-file-trial-*.dat")
		if err != nil {
			return fmt.Errorf("temporary file: %w", err)
		}
		path = f.Name()
		f.Close()
		defer os.Remove(path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%s: O_DIRECT not supported here (try --direct=false): %w", path, pe.Err)
		}
		return err
	}
	return f.Close()
}

// ringOptions are the fileio options of a ringev row.
func ringOptions(m fileio.Mode, sqIdle time.Duration, deputy int, pageFirst bool) []fileio.Option {
	opts := []fileio.Option{fileio.WithMode(m), fileio.WithPageCacheFirst(pageFirst)}
	if sqIdle > 0 {
		opts = append(opts, fileio.WithSQIdle(sqIdle))
	}
	if deputy > 0 {
		opts = append(opts, fileio.WithDeputy(deputy))
	}
	return opts
}

// readerWriterAt is what a row drives: os.File and fileio.File both are.
type readerWriterAt interface {
	io.ReaderAt
	io.WriterAt
}

// RunFileRow measures one row in this process: it opens the file (with the ring, for ringev),
// reads it once for a page-cache row, then runs row.Goroutines goroutines for row.Duration,
// each doing one operation at a time at random BS-aligned offsets. Closing stop ends the row
// early with an error wrapping ErrStopped. The thread count is the process's, so in a process
// that ran other rows before it counts their idle threads too.
func RunFileRow(row FileRow, stop <-chan struct{}) (res FileResult, err error) {
	flags := os.O_RDWR
	if row.Direct {
		flags |= unix.O_DIRECT
	}
	res = FileResult{API: row.API, Goroutines: row.Goroutines, Direct: row.Direct, Mode: string(row.Mode),
		RW: row.RW, BS: row.BS, Rate: row.Rate}
	if row.API == APIOS {
		res.Mode = "pread"
		if row.RW == RWRandWrite {
			res.Mode = "pwrite"
		}
	}
	if !row.Direct {
		if err := warm(row.Path, stop); err != nil {
			return res, err
		}
	}
	var target readerWriterAt
	var size int64
	var ring *fileio.Ring
	var closeFn func() error
	switch row.API {
	case APIOS:
		f, err := os.OpenFile(row.Path, flags, 0)
		if err != nil {
			return res, err
		}
		target, closeFn = f, f.Close
	case APIRingev:
		r, err := fileio.NewRing(ringOptions(row.Mode, row.SQIdle, row.Deputy, row.PageCacheFirst)...)
		if err != nil {
			return res, err
		}
		f, err := r.Open(row.Path, flags, 0)
		if err != nil {
			r.Close()
			return res, err
		}
		ring, target, closeFn = r, f, r.Close
		res.Mode, res.Reason = string(r.Mode()), r.Reason()
	default:
		return res, fmt.Errorf("api %q: must be %s or %s", row.API, APIOS, APIRingev)
	}
	defer func() {
		if cerr := closeFn(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	st, err := os.Stat(row.Path)
	if err != nil {
		return res, err
	}
	size = st.Size()
	blocks := uint64(size / int64(row.BS))
	if blocks == 0 {
		return res, fmt.Errorf("file %s is %d bytes, smaller than bs %d", row.Path, size, row.BS)
	}

	var (
		stopFlag atomic.Bool
		opsDone  atomic.Int64
		next     atomic.Int64 // rate: the next operation's index
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	hists := make([]*hdrhistogram.Histogram, row.Goroutines)
	ops := make([]int64, row.Goroutines)
	start := time.Now()
	threads := newThreadWatch()
	u0, s0 := processCPU()
	for g := range row.Goroutines {
		hists[g] = newFileHist()
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := fileio.AlignedBuffer(row.BS)
			if row.RW == RWRandWrite {
				for i := range buf {
					buf[i] = byte(i*7 + g)
				}
			}
			rng := rand.New(rand.NewPCG(row.Seed, uint64(g)))
			h := hists[g]
			for !stopFlag.Load() {
				if row.Rate > 0 {
					i := next.Add(1) - 1
					due := start.Add(time.Duration(i * int64(time.Second) / int64(row.Rate)))
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
					if stopFlag.Load() {
						break
					}
				}
				off := int64(rng.Uint64N(blocks)) * int64(row.BS)
				t0 := time.Now()
				var err error
				if row.RW == RWRandRead {
					_, err = target.ReadAt(buf, off)
				} else {
					_, err = target.WriteAt(buf, off)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					stopFlag.Store(true)
					return
				}
				h.RecordValue(max(int64(time.Since(t0))/fileHistUnit, 1))
				ops[g]++
				opsDone.Add(1)
			}
		}()
	}
	timer := time.NewTimer(row.Duration)
	select {
	case <-timer.C:
	case <-stop:
		firstErr = ErrStopped
	}
	timer.Stop()
	stopFlag.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	u1, s1 := processCPU()
	res.Threads = threads.stop()
	if firstErr != nil {
		return res, firstErr
	}
	total := newFileHist()
	for g, h := range hists {
		total.Merge(h)
		res.Ops += ops[g]
	}
	res.Seconds = elapsed.Seconds()
	res.IOPS = float64(res.Ops) / elapsed.Seconds()
	us := func(q float64) float64 { return float64(total.ValueAtQuantile(q)*fileHistUnit) / 1e3 }
	res.P50Us, res.P99Us, res.P999Us = us(50), us(99), us(99.9)
	if res.Ops > 0 {
		res.CPUUsPerOp = float64((u1-u0)+(s1-s0)) / float64(time.Microsecond) / float64(res.Ops)
	}
	if ring != nil {
		st := ring.Stats()
		res.RingOps, res.Wakeups = st.RingOps, st.Wakeups
	}
	return res, nil
}

// fileHistUnit is the unit of a row's latency histograms, in ns.
const fileHistUnit = 100

// newFileHist returns a latency histogram of fileHistUnit (0.1 µs) from 0.1 µs to 100 s, two
// significant digits (1 %): a few KiB, where rio's (1 ns, three digits) takes hundreds, which
// with one histogram per goroutine would miss the cache on every operation.
func newFileHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(100*time.Second)/fileHistUnit, 2)
}

// warm reads the file once, so that the page cache holds it.
func warm(path string, stop <-chan struct{}) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if stopped(stop) {
			return ErrStopped
		}
		_, err := f.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s into the page cache: %w", path, err)
		}
	}
}

// threadWatch samples the process's thread count every threadSample until stop.
type threadWatch struct {
	most atomic.Int64
	done chan struct{}
	wg   sync.WaitGroup
}

// threadSample is how often threadWatch looks: a look costs about a /proc read, so that the
// watch does not weigh on the CPU per operation it sits beside.
const threadSample = 50 * time.Millisecond

func newThreadWatch() *threadWatch {
	w := &threadWatch{done: make(chan struct{})}
	w.sample()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(threadSample)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w
}

func (w *threadWatch) sample() {
	if n := int64(processThreads()); n > w.most.Load() {
		w.most.Store(n)
	}
}

// stop ends the sampling and returns the most threads seen.
func (w *threadWatch) stop() int {
	close(w.done)
	w.wg.Wait()
	w.sample()
	return int(w.most.Load())
}

// processThreads reads num_threads, field 20 of /proc/self/stat (0 when unreadable): every
// thread of the process, io_uring's SQ and worker threads included. /proc/self/stat is cheaper
// to read than /proc/self/status, which also sums the memory maps.
func processThreads() int {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // f[0] is field 3
	if len(f) < 18 {
		return 0
	}
	n, _ := strconv.Atoi(f[17])
	return n
}

// FileRowEnv is the environment variable that makes a process measure one row (ExecFileRow's
// child): it holds the row as JSON.
const FileRowEnv = "RINGEV_BENCH_FILE_ROW"

// FileRowChild measures the row in FileRowEnv, if set, and prints its FileResult as JSON on
// stdout (or the error on stderr, exit status 1); it reports whether it did. Call it first in
// main (and in TestMain of a package whose tests use ExecFileRow).
func FileRowChild(stdout, stderr io.Writer) (done bool, status int) {
	v := os.Getenv(FileRowEnv)
	if v == "" {
		return false, 0
	}
	var row FileRow
	if err := json.Unmarshal([]byte(v), &row); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", FileRowEnv, err)
		return true, 1
	}
	res, err := RunFileRow(row, nil)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return true, 1
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return true, 1
	}
	return true, 0
}

// ExecFileRow returns a FileConfig.RunRow that measures each row in a new process: exe (this
// program, which must call FileRowChild first) with FileRowEnv set. Closing stop kills the
// process, and so does the death of this one (PR_SET_PDEATHSIG).
func ExecFileRow(exe string) func(FileRow, <-chan struct{}) (FileResult, error) {
	return func(row FileRow, stop <-chan struct{}) (FileResult, error) {
		var res FileResult
		b, err := json.Marshal(row)
		if err != nil {
			return res, err
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), FileRowEnv+"="+string(b), "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		// A row outlives no parent, even one killed by SIGKILL.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return res, fmt.Errorf("starting the row's process: %w", err)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err = <-waited:
		case <-stop:
			cmd.Process.Kill()
			<-waited
			return res, ErrStopped
		}
		if err != nil {
			return res, fmt.Errorf("row process: %v: %s", err, strings.TrimSpace(errb.String()))
		}
		if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
			return res, fmt.Errorf("row process output %q: %w", out.String(), err)
		}
		return res, nil
	}
}
