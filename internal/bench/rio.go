//go:build linux

package bench

// `ringev bench rio`: fio-style random-read latency over ringev's io_uring
// binding, without SQPOLL, with SQPOLL, and with SQPOLL plus deputy
// submission (uring.Deputy), after the second seed (fio --rw=randread
// --ioengine=io_uring --sqthread_poll --rate_iops ... --io_sq_thread_idle ...).

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/uring"
)

// Submission modes of a rio run (RioResult.Mode).
const (
	ModeNoSQPoll = "none"   // no SQPOLL: io_uring_enter(2) submits in the caller
	ModeSQPoll   = "sqpoll" // SQPOLL: the kernel's SQ thread submits
	ModeDeputy   = "deputy" // SQPOLL with deputy submission (uring.Deputy)
)

// Ops of a rio run (RioConfig.Op).
const (
	OpRead = "read" // IORING_OP_READ of BS bytes at a random BS-aligned offset
	OpNop  = "nop"  // IORING_OP_NOP: the ring's own cost, no file
)

// Defaults of RioConfig.
const (
	DefaultRioSize    = 1 << 30 // bytes of the temporary file
	DefaultRioBS      = 4096    // bytes per read
	DefaultRioIODepth = 128     // reads in flight at most
	DefaultRioRuntime = 10 * time.Second
	// DefaultRioDeputy is the deputy N of the grid's deputy mode when
	// RioConfig.Deputy is 0.
	DefaultRioDeputy = 8
	// MaxRioIODepth is the largest iodepth (the largest SQ io_uring allows).
	MaxRioIODepth = 32768
)

// RioConfig is one rio run. The zero value is not valid: start from
// DefaultRioConfig.
type RioConfig struct {
	// File is the file or block device read; "" creates a temporary file of
	// Size bytes in os.TempDir (filled with random data, so that O_DIRECT
	// reads reach the device) and removes it afterwards. Unused for OpNop.
	File string
	// Size is the temporary file's size in bytes (>= BS).
	Size int64
	// BS is the bytes per read (> 0; a multiple of 512 with Direct).
	BS int
	// IODepth is the most I/Os in flight (1..MaxRioIODepth).
	IODepth int
	// RateIOPS limits the issue rate in I/Os per second; 0 means unlimited
	// (IODepth I/Os always in flight).
	RateIOPS int
	// RateProcess is RateLinear or RatePoisson.
	RateProcess string
	// Direct opens the file with O_DIRECT (bypassing the page cache).
	Direct bool
	// Op is OpRead or OpNop.
	Op string
	// Runtime is how long I/Os are issued (> 0); those in flight at the end
	// are still reaped and counted.
	Runtime time.Duration
	// SQPoll uses an SQPOLL ring (IORING_SETUP_SQPOLL).
	SQPoll bool
	// SQIdle is the SQ thread's idle time before it sleeps; the kernel's
	// unit is milliseconds; 0 is the kernel's default (1 s).
	SQIdle time.Duration
	// SQCPU pins the SQ thread to this CPU (IORING_SETUP_SQ_AFF); < 0: not
	// pinned.
	SQCPU int
	// CPU pins the submitting thread to this CPU (fio's cpus_allowed); < 0:
	// not pinned. With SQPOLL on a small machine, keeping it off SQCPU
	// avoids sharing a core with the busy-polling SQ thread.
	CPU int
	// Deputy is the deputy submission N (uring.NewDeputy); 0 is off. It
	// needs SQPoll.
	Deputy int
	// HiPri uses IORING_SETUP_IOPOLL (busy-polled completions; needs
	// Direct and a device with poll queues).
	HiPri bool
	// Progress receives a progress bar (a terminal); nil for none.
	Progress io.Writer
	// Notes receives one-line notes (temporary file creation); nil for none.
	Notes io.Writer
	// Seed seeds the offsets and the Poisson gaps; 0 picks a random seed.
	Seed uint64
	// Stop, when closed, ends the run early: the temporary file's writing
	// stops, the I/Os in flight are reaped, the file is removed and the run
	// returns an error wrapping ErrStopped. nil: never.
	Stop <-chan struct{}
}

// ErrStopped is the error of a run ended by closing RioConfig.Stop or Options.Stop (bench pipes).
var ErrStopped = errors.New("stopped")

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// DefaultRioConfig returns the defaults of `ringev bench rio`: 4 KiB O_DIRECT
// random reads of a 1 GiB temporary file, iodepth 128, unlimited rate
// (linear when limited), 10 s, no SQPOLL.
func DefaultRioConfig() RioConfig {
	return RioConfig{
		Size: DefaultRioSize, BS: DefaultRioBS, IODepth: DefaultRioIODepth,
		RateProcess: RateLinear, Direct: true, Op: OpRead, Runtime: DefaultRioRuntime, SQCPU: -1, CPU: -1,
	}
}

// Mode returns the submission mode the config selects (ModeNoSQPoll,
// ModeSQPoll or ModeDeputy).
func (c RioConfig) Mode() string {
	switch {
	case !c.SQPoll:
		return ModeNoSQPoll
	case c.Deputy > 0:
		return ModeDeputy
	}
	return ModeSQPoll
}

// Validate checks the config's values (not the file) and returns an error
// naming the field and the bad value.
func (c RioConfig) Validate() error {
	switch {
	case c.Op != OpRead && c.Op != OpNop:
		return fmt.Errorf("op %q: must be %s or %s", c.Op, OpRead, OpNop)
	case c.BS <= 0 || c.BS > 1<<30:
		return fmt.Errorf("bs %d: must be 1 byte .. 1 GiB", c.BS)
	case c.Direct && c.Op == OpRead && c.BS%512 != 0:
		return fmt.Errorf("bs %d: O_DIRECT needs a multiple of 512 bytes (or --direct=false)", c.BS)
	case c.IODepth < 1 || c.IODepth > MaxRioIODepth:
		return fmt.Errorf("iodepth %d: must be 1..%d", c.IODepth, MaxRioIODepth)
	case c.RateIOPS < 0:
		return fmt.Errorf("rate-iops %d: must be >= 0 (0: unlimited)", c.RateIOPS)
	case c.RateProcess != RateLinear && c.RateProcess != RatePoisson:
		return fmt.Errorf("rate-process %q: must be %s or %s", c.RateProcess, RateLinear, RatePoisson)
	case c.Runtime <= 0:
		return fmt.Errorf("runtime %v: must be > 0", c.Runtime)
	case c.SQIdle < 0:
		return fmt.Errorf("sq-idle %v: must be >= 0", c.SQIdle)
	case c.Deputy < 0:
		return fmt.Errorf("deputy %d: must be >= 0", c.Deputy)
	case c.Deputy > 0 && !c.SQPoll:
		return fmt.Errorf("deputy %d: deputy submission needs sqpoll", c.Deputy)
	case c.HiPri && !c.Direct:
		return errors.New("hipri: IOPOLL needs O_DIRECT (direct)")
	case c.File == "" && c.Op == OpRead && c.Size < int64(c.BS):
		return fmt.Errorf("size %d: smaller than bs %d", c.Size, c.BS)
	}
	return nil
}

// RioLatency summarises one latency histogram, in microseconds.
type RioLatency struct {
	Count  int64   `json:"count"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p99_9_us"`
	MaxUs  float64 `json:"max_us"`
}

// RioCPU is CPU time used during the measured part of a run, in seconds.
type RioCPU struct {
	// UserS and SysS are the process's user and system time (getrusage
	// RUSAGE_SELF, the SQ thread included).
	UserS float64 `json:"user_s"`
	SysS  float64 `json:"sys_s"`
	// SQThreadS is the SQ thread's (iou-sqp-*) time, -1 without one.
	SQThreadS float64 `json:"sq_thread_s"`
}

// RioResult is one rio run.
type RioResult struct {
	Mode        string  `json:"mode"`
	Op          string  `json:"op"`
	File        string  `json:"file,omitempty"`
	BS          int     `json:"bs"`
	IODepth     int     `json:"iodepth"`
	RateIOPS    int     `json:"rate_iops"`
	RateProcess string  `json:"rate_process"`
	Direct      bool    `json:"direct"`
	HiPri       bool    `json:"hipri"`
	SQIdleMs    int64   `json:"sq_idle_ms"`
	SQCPU       int     `json:"sq_cpu"`
	CPUPin      int     `json:"submit_cpu"`
	Deputy      int     `json:"deputy"`
	SetupFlags  uint32  `json:"setup_flags"`
	Seconds     float64 `json:"seconds"`
	IOs         int64   `json:"ios"`
	IOPS        float64 `json:"iops"`
	MiBPerSec   float64 `json:"mib_per_sec"`
	// Submission is from preparing an I/O's SQE to the return of the
	// Submit that handed it over; Completion from there to reaping its
	// CQE; Total is both (what the caller waits).
	Submission RioLatency `json:"submission"`
	Completion RioLatency `json:"completion"`
	Total      RioLatency `json:"total"`
	CPU        RioCPU     `json:"cpu"`
	// SubmitCalls counts Submit calls; SubmitsAsleep those that found the
	// SQ thread asleep (IORING_SQ_NEED_WAKEUP); DeputySQEs the SQEs
	// submitted by the deputy (uring.DeputyStats).
	SubmitCalls   int64 `json:"submit_calls"`
	SubmitsAsleep int64 `json:"submits_asleep"`
	DeputySQEs    int64 `json:"deputy_sqes"`
}

// rioRing is what a run needs of *uring.Ring and *uring.Deputy.
type rioRing interface {
	GetSQE() *uring.SQE
	Submit() (int, error)
	SubmitAndWaitTimeout(n uint32, timeout time.Duration) (int, error)
	PeekCQE() *uring.CQE
	CQESeen()
}

// rioTarget is an open file to read.
type rioTarget struct {
	f    *os.File
	size int64
	path string
}

// RunRio makes one run of cfg and returns its result. It creates (and
// removes) the temporary file when cfg.File is empty. Errors: cfg.Validate's,
// a file that cannot be opened or is smaller than BS, io_uring setup (naming
// SQPOLL or IOPOLL when the kernel or device refuses it), or the first
// failed I/O (which ends the run).
func RunRio(cfg RioConfig) (RioResult, error) {
	res, err := RunRioGrid(cfg, RioGrid{})
	if len(res) == 0 {
		return RioResult{}, err
	}
	return res[0], err
}

// openTarget opens cfg.File (or creates the temporary file) and checks its
// size; cleanup closes (and removes) it.
func openTarget(cfg RioConfig) (t *rioTarget, cleanup func(), err error) {
	if cfg.Op == OpNop {
		return nil, func() {}, nil
	}
	path, remove := cfg.File, false
	if path != "" {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			return nil, nil, fmt.Errorf("file %s is a directory: --file takes a file or a block device", path)
		}
	}
	if path == "" {
		if path, err = createTempFile(cfg.Size, cfg.Notes, cfg.Stop); err != nil {
			return nil, nil, err
		}
		remove = true
	}
	removeIt := func() {
		if remove {
			os.Remove(path)
		}
	}
	flags := os.O_RDONLY
	if cfg.Direct {
		flags |= unix.O_DIRECT
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		removeIt()
		name := "file " + path // the temporary file
		if cfg.File != "" {
			name = "--file " + path
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named already
		}
		if cfg.Direct && errors.Is(err, unix.EINVAL) {
			return nil, nil, fmt.Errorf("%s: O_DIRECT not supported here (try --direct=false): %w", name, err)
		}
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	size, err := f.Seek(0, io.SeekEnd) // works for block devices too
	if err != nil {
		f.Close()
		removeIt()
		return nil, nil, fmt.Errorf("file %s: size: %w", path, err)
	}
	if size < int64(cfg.BS) {
		f.Close()
		removeIt()
		return nil, nil, fmt.Errorf("file %s is %d bytes, smaller than bs %d", path, size, cfg.BS)
	}
	return &rioTarget{f: f, size: size, path: path}, func() { f.Close(); removeIt() }, nil
}

// createTempFile writes a file of size bytes of pseudo-random data in
// os.TempDir and syncs it; it returns its path. Closing stop ends the writing
// and removes the file (the error wraps ErrStopped).
func createTempFile(size int64, notes io.Writer, stop <-chan struct{}) (string, error) {
	return writeTempFile("", "ringev-rio-*.dat", "rio", size, notes, stop)
}

// writeTempFile is createTempFile in directory dir ("": os.TempDir) with the
// name pattern of os.CreateTemp; what names the benchmark in the note.
func writeTempFile(dir, pattern, what string, size int64, notes io.Writer, stop <-chan struct{}) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err == nil && uint64(size) > fs.Bavail*uint64(fs.Bsize) {
		return "", fmt.Errorf("temporary file of %s does not fit in %s (%s free): use a smaller --size or --file",
			formatBytes(size), dir, formatBytes(int64(fs.Bavail*uint64(fs.Bsize))))
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("temporary file: %w", err)
	}
	if notes != nil {
		fmt.Fprintf(notes, "%s: writing %s temporary file %s\n", what, formatBytes(size), f.Name())
	}
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("temporary file %s: %w", f.Name(), err)
	}
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(buf); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if stopped(stop) {
			return fail(ErrStopped)
		}
		buf[0]++ // no two chunks alike (no dedup or compression shortcuts)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// formatBytes prints n in the largest binary unit that divides it evenly
// enough (1.00 GiB, 4.00 KiB, 512 B).
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// newHist returns a latency histogram of nanoseconds, 1 ns .. 100 s, three
// significant digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(100*time.Second), 3)
}

// summarize turns a histogram of nanoseconds into a RioLatency (µs).
func summarize(h *hdrhistogram.Histogram) RioLatency {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	if h.TotalCount() == 0 {
		return RioLatency{}
	}
	return RioLatency{
		Count:  h.TotalCount(),
		MeanUs: h.Mean() / 1e3,
		P50Us:  us(h.ValueAtQuantile(50)),
		P90Us:  us(h.ValueAtQuantile(90)),
		P99Us:  us(h.ValueAtQuantile(99)),
		P999Us: us(h.ValueAtQuantile(99.9)),
		MaxUs:  us(h.Max()),
	}
}

// runOne makes one run on a new goroutine locked to a new OS thread (the
// ring's thread rule; the thread is discarded afterwards since its timer
// slack was changed).
func runOne(cfg RioConfig, t *rioTarget, prog *rioProgress) (RioResult, error) {
	type out struct {
		r   RioResult
		err error
	}
	ch := make(chan out, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with us
		r, err := runLocked(cfg, t, prog)
		ch <- out{r, err}
	}()
	o := <-ch
	return o.r, o.err
}

// newRioRing creates the ring (and deputy) for cfg; close releases both.
func newRioRing(cfg RioConfig) (ring rioRing, r *uring.Ring, d *uring.Deputy, sqTID int, closeFn func(), err error) {
	entries := uint32(1) << bits.Len32(uint32(cfg.IODepth-1))
	opts := []uring.Option{uring.WithEntries(entries)}
	if cfg.SQPoll {
		opts = append(opts, uring.WithSQPoll(cfg.SQIdle))
		if cfg.SQCPU >= 0 {
			opts = append(opts, uring.WithSQThreadCPU(cfg.SQCPU))
		}
	}
	before := taskIDs()
	if cfg.HiPri {
		// IOPOLL with the best of the usual flags, by trial.
		for _, f := range []uint32{uring.SetupSingleIssuer | uring.SetupDeferTaskrun, uring.SetupSingleIssuer, 0} {
			if cfg.SQPoll && f&uring.SetupDeferTaskrun != 0 {
				continue
			}
			r, err = uring.New(append(opts, uring.WithFlags(uring.SetupIOPoll|f))...)
			if err == nil || !errors.Is(err, unix.EINVAL) {
				break
			}
		}
	} else {
		r, err = uring.New(opts...)
	}
	if err != nil {
		what := "io_uring setup"
		if cfg.HiPri {
			what += " with IOPOLL (--hipri)"
		}
		if cfg.SQPoll {
			what += fmt.Sprintf(" with SQPOLL (SQ thread idle %v", cfg.SQIdle)
			if cfg.SQCPU >= 0 {
				what += fmt.Sprintf(", on CPU %d", cfg.SQCPU)
			}
			what += ")"
		}
		return nil, nil, nil, 0, nil, fmt.Errorf("%s: %w", what, err)
	}
	if cfg.SQPoll {
		sqTID = findSQThread(before)
	}
	ring = r
	closeFn = func() { r.Close() }
	if cfg.Deputy > 0 {
		if d, err = uring.NewDeputy(r, cfg.Deputy); err != nil {
			r.Close()
			return nil, nil, nil, 0, nil, fmt.Errorf("deputy %d: %w", cfg.Deputy, err)
		}
		ring = d
		closeFn = func() { d.Close(); r.Close() }
	}
	return ring, r, d, sqTID, closeFn, nil
}

// drainTimeout bounds the wait for the I/Os still in flight after the run.
const drainTimeout = 10 * time.Second

// stopPoll bounds each wait for completions, so that RioConfig.Stop is
// noticed within it.
const stopPoll = 100 * time.Millisecond

// runLocked is one run on the calling goroutine, which is locked to its
// thread.
func runLocked(cfg RioConfig, t *rioTarget, prog *rioProgress) (res RioResult, err error) {
	// Precise timed waits: the default 50 µs timer slack would delay every
	// wake-up for the next scheduled I/O.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if cfg.CPU >= 0 {
		var set unix.CPUSet
		set.Set(cfg.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return res, fmt.Errorf("--cpu %d: sched_setaffinity: %w", cfg.CPU, err)
		}
	}

	ring, r, d, sqTID, closeRing, err := newRioRing(cfg)
	if err != nil {
		return res, err
	}
	defer closeRing()

	depth, bs := cfg.IODepth, cfg.BS
	var bufs []byte
	if cfg.Op == OpRead {
		// Off the Go heap and page-aligned (O_DIRECT); unmapped only when
		// no read is in flight (buffer-lifetime rule).
		bufs, err = unix.Mmap(-1, 0, depth*bs, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			return res, fmt.Errorf("read buffers (%d x %d bytes): %w", depth, bs, err)
		}
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	var sched *rioSchedule
	if cfg.RateIOPS > 0 {
		if sched, err = newRioSchedule(cfg.RateIOPS, cfg.RateProcess, seed); err != nil {
			return res, err
		}
	}
	var fd int
	var blocks uint64
	if t != nil {
		fd = int(t.f.Fd())
		blocks = uint64(t.size / int64(bs))
	}

	hSub, hComp, hTot := newHist(), newHist(), newHist()
	type slot struct{ prep, issued int64 }
	slots := make([]slot, depth)
	free := make([]int, depth)
	for i := range free {
		free[i] = depth - 1 - i
	}
	batch := make([]int, 0, depth)
	inflight := 0
	var ios, submitCalls, asleep int64
	var ioErr error

	base := time.Now()
	clock := func() int64 { return int64(time.Since(base)) }
	reap := func(now int64) {
		for cqe := ring.PeekCQE(); cqe != nil; cqe = ring.PeekCQE() {
			s, rres := int(cqe.UserData), cqe.Res
			ring.CQESeen()
			if s < 0 || s >= depth {
				if ioErr == nil {
					ioErr = fmt.Errorf("unexpected CQE user_data %d", cqe.UserData)
				}
				continue
			}
			inflight--
			free = append(free, s)
			if cfg.Op == OpRead && rres != int32(bs) {
				if ioErr == nil {
					ioErr = rioIOError(cfg, t, rres)
				}
				continue
			}
			hComp.RecordValue(max(now-slots[s].issued, 1))
			hTot.RecordValue(max(now-slots[s].prep, 1))
			ios++
		}
		if prog != nil {
			prog.ios.Store(ios)
		}
	}

	u0, s0 := processCPU()
	var sq0 time.Duration
	if sqTID != 0 {
		sq0, _ = threadCPU(sqTID)
	}
	end := int64(cfg.Runtime)
	next := int64(0)
	if sched != nil {
		next = sched.next()
	}
	for ioErr == nil {
		if stopped(cfg.Stop) {
			ioErr = ErrStopped
			break
		}
		now := clock()
		if now >= end {
			break
		}
		batch = batch[:0]
		for inflight < depth && (sched == nil || next <= now) {
			sqe := ring.GetSQE()
			if sqe == nil {
				break
			}
			s := free[len(free)-1]
			free = free[:len(free)-1]
			if cfg.Op == OpNop {
				sqe.PrepNop()
			} else {
				off := rng.Uint64N(blocks) * uint64(bs)
				sqe.PrepRead(fd, bufs[s*bs:(s+1)*bs], off)
			}
			sqe.SetUserData(uint64(s))
			slots[s].prep = now
			inflight++
			batch = append(batch, s)
			if sched != nil {
				next = sched.next()
			}
		}
		if len(batch) > 0 {
			if d == nil && r.SQThreadSleeping() {
				asleep++
			}
			if _, err := ring.Submit(); err != nil {
				ioErr = fmt.Errorf("submit: %w", err)
				break
			}
			submitCalls++
			ts := clock()
			for _, s := range batch {
				slots[s].issued = ts
				hSub.RecordValue(max(ts-slots[s].prep, 1))
			}
		}
		until := end
		if sched != nil && next < until {
			until = next
		}
		// At most stopPoll, so that a closed Stop is seen soon.
		wait := min(max(time.Duration(until-clock()), 0), stopPoll)
		if _, err := ring.SubmitAndWaitTimeout(1, wait); err != nil && !errors.Is(err, unix.ETIME) {
			ioErr = fmt.Errorf("wait: %w", err)
			break
		}
		reap(clock())
	}
	// Reap what is still in flight (bounded), so the buffers can go.
	drainEnd := time.Now().Add(drainTimeout)
	for inflight > 0 && time.Now().Before(drainEnd) {
		if _, err := ring.SubmitAndWaitTimeout(1, time.Until(drainEnd)); err != nil && !errors.Is(err, unix.ETIME) {
			if ioErr == nil {
				ioErr = fmt.Errorf("drain: %w", err)
			}
			break
		}
		reap(clock())
	}
	elapsed := time.Since(base)
	u1, s1 := processCPU()
	sqCPU := -1.0
	if sqTID != 0 {
		if sq1, ok := threadCPU(sqTID); ok {
			sqCPU = (sq1 - sq0).Seconds()
		}
	}
	if bufs != nil {
		if inflight == 0 {
			unix.Munmap(bufs)
		} else if ioErr == nil {
			// Leave the mapping: the kernel may still write into it.
			ioErr = fmt.Errorf("%d reads still in flight after %v", inflight, drainTimeout)
		}
	}

	res = RioResult{
		Mode: cfg.Mode(), Op: cfg.Op, BS: bs, IODepth: depth, RateIOPS: cfg.RateIOPS,
		RateProcess: cfg.RateProcess, Direct: cfg.Direct, HiPri: cfg.HiPri, SQCPU: cfg.SQCPU, CPUPin: cfg.CPU, Deputy: cfg.Deputy,
		SetupFlags: r.SetupFlags(), Seconds: elapsed.Seconds(), IOs: ios,
		Submission: summarize(hSub), Completion: summarize(hComp), Total: summarize(hTot),
		CPU:         RioCPU{UserS: (u1 - u0).Seconds(), SysS: (s1 - s0).Seconds(), SQThreadS: sqCPU},
		SubmitCalls: submitCalls, SubmitsAsleep: asleep,
	}
	if cfg.SQPoll {
		res.SQIdleMs = int64((cfg.SQIdle + time.Millisecond - 1) / time.Millisecond)
	}
	if t != nil {
		res.File = t.path
	}
	if d != nil {
		st := d.Stats()
		res.SubmitsAsleep = int64(st.Asleep)
		res.DeputySQEs = int64(st.DeputySQEs)
	}
	if elapsed > 0 {
		res.IOPS = float64(ios) / elapsed.Seconds()
		if cfg.Op == OpRead {
			res.MiBPerSec = res.IOPS * float64(bs) / (1 << 20)
		}
	}
	return res, ioErr
}

// rioIOError describes a failed read (res is -errno, or a short count).
func rioIOError(cfg RioConfig, t *rioTarget, res int32) error {
	if res >= 0 {
		return fmt.Errorf("short read of %s: %d of %d bytes", t.path, res, cfg.BS)
	}
	errno := unix.Errno(-res)
	switch {
	case cfg.HiPri && (errno == unix.EOPNOTSUPP || errno == unix.EINVAL):
		return fmt.Errorf("hipri: the device of %s cannot poll (IOPOLL needs a block device with poll queues, see /sys/block/*/queue/io_poll): read: %w", t.path, errno)
	case cfg.Direct && errno == unix.EINVAL:
		return fmt.Errorf("O_DIRECT read of %s failed (bs %d not aligned to the device's logical block size?): %w", t.path, cfg.BS, errno)
	}
	return fmt.Errorf("read %s: %w", t.path, errno)
}

// rioProgress is the shared state of the progress line: the measuring thread
// stores, the progress goroutine loads.
type rioProgress struct {
	ios atomic.Int64
}
