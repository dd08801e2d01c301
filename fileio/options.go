//go:build unix

package fileio

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Mode is how a Ring hands operations to the kernel.
type Mode string

// The modes. ModeAuto is what NewRing uses without WithMode.
const (
	// ModeAuto picks ModeDefault where io_uring works, else ModeThreads, and Reason says why.
	ModeAuto Mode = "auto"
	// ModePlain is an io_uring without setup flags: the owner's io_uring_enter(2) submits,
	// and completion work runs as task work that interrupts the owner's thread.
	ModePlain Mode = "plain"
	// ModeDeferTaskrun is an io_uring with IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN (Linux
	// 6.1): completion work runs only when the owner waits, in one batch, never as an
	// interruption.
	ModeDeferTaskrun Mode = "defer-taskrun"
	// ModeSQPoll is an io_uring with IORING_SETUP_SQPOLL (5.1; unprivileged since 5.11): a
	// kernel thread submits what the owner publishes, without a system call while it is
	// awake (see WithSQIdle).
	ModeSQPoll Mode = "sqpoll"
	// ModeDeputy is ModeSQPoll with deputy submission (uring.Deputy): when the SQ thread
	// sleeps, the owner submits up to WithDeputy's N operations itself, at once, and wakes
	// the thread for what follows.
	ModeDeputy Mode = "deputy"
	// ModeNetpoll is an io_uring without setup flags whose owner goroutine is not locked to an
	// OS thread and never waits in a system call: the ring signals an eventfd when it posts
	// completions (IORING_REGISTER_EVENTFD, Linux 5.2; io_uring_register(2)), and the owner
	// waits for that eventfd in Go's netpoller (never reading it), so the ring costs no OS thread of
	// its own, and no runtime template thread (runtime.LockOSThread starts one). Its
	// submissions are io_uring_enter(2) calls that do not wait, from whichever thread runs the
	// owner then; each completion's work runs as task work on the thread that submitted it,
	// which the kernel interrupts for it (TWA_SIGNAL: no IORING_SETUP_COOP_TASKRUN, which
	// would leave it to a thread that may be asleep). Work the kernel hands to its io-wq
	// workers (buffered writes, fsync) belongs to the submitting thread too: if that thread
	// exits first (Go ends a thread only when a goroutine exits while locked to it), the
	// kernel cancels work not yet started, and the owner submits it again.
	ModeNetpoll Mode = "netpoll"
	// ModeThreads is the fallback without io_uring: pread(2)/pwrite(2) on a bounded pool of
	// goroutines, each blocking an OS thread while its call runs (see WithThreads).
	ModeThreads Mode = "threads"
)

// ModeDefault is the io_uring mode ModeAuto picks: ModeNetpoll, whose owner holds no OS thread
// (and starts no runtime template thread), so that a program reading files through a Ring has
// no more threads than the Go runtime's own. On the shapes of `ringev bench file` (4 KiB
// random reads, O_DIRECT, 1 to 256 goroutines) it took no more CPU per read than
// ModeDeferTaskrun, with one or two threads fewer (docs/design.md, "File I/O"); and it works
// on kernels before 6.1, which refuse DEFER_TASKRUN. The SQPOLL modes give more IOPS for about
// twice the CPU, as their kernel thread polls a core. Reads served by the page cache do not
// reach the ring (WithPageCacheFirst), so the mode does not matter there.
const ModeDefault = ModeNetpoll

// Modes returns the modes WithMode accepts, ModeAuto first.
func Modes() []Mode {
	return []Mode{ModeAuto, ModePlain, ModeDeferTaskrun, ModeSQPoll, ModeDeputy, ModeNetpoll, ModeThreads}
}

// Defaults of the options.
const (
	DefaultEntries = 256 // SQ entries
	DefaultDeputy  = 8   // deputy N
	DefaultThreads = 64  // fallback pool size
	// DefaultSQIdle is the SQ thread's idle time before it sleeps in the SQPOLL modes.
	DefaultSQIdle = 10 * time.Millisecond
	// DefaultFileSlots is the size of the registered-file table.
	DefaultFileSlots = 1024
)

// config is what the options set.
type config struct {
	mode      Mode
	entries   int
	sqIdle    time.Duration
	sqCPU     int
	deputy    int
	threads   int
	pageFirst bool
	regFiles  bool
}

// Option configures NewRing.
type Option func(*config)

// WithMode selects the submission mode (default ModeAuto). An io_uring mode that cannot be
// set up makes NewRing fail with the reason; only ModeAuto falls back to ModeThreads.
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithEntries sets the ring's SQ entries (default DefaultEntries, 1..32768; the kernel rounds
// up to a power of two). At most four times as many operations are in the kernel at once;
// more wait, in order, in the owner.
func WithEntries(n int) Option { return func(c *config) { c.entries = n } }

// WithSQIdle sets how long the SQ thread of the SQPOLL modes polls without work before it
// sleeps (default DefaultSQIdle; the kernel's unit is milliseconds, rounded up). 0 is not "sleep
// at once": the kernel then uses its own default, one second (io_uring_setup(2), sq_thread_idle).
func WithSQIdle(d time.Duration) Option { return func(c *config) { c.sqIdle = d } }

// WithSQThreadCPU pins the SQ thread of the SQPOLL modes to cpu (IORING_SETUP_SQ_AFF); a
// negative cpu pins none (the default), and the other modes ignore it. A CPU the kernel refuses
// (one it does not know or that is offline; recent kernels also refuse one outside the
// process's cpuset) makes NewRing fail with an error that names the option and wraps
// io_uring_setup(2)'s unix.EINVAL.
func WithSQThreadCPU(cpu int) Option { return func(c *config) { c.sqCPU = cpu } }

// WithDeputy sets ModeDeputy's N: the most operations the owner submits itself when it finds
// the SQ thread asleep (default DefaultDeputy, >= 1). It does not choose the mode:
// WithMode(ModeDeputy) turns deputy submission on, and other modes ignore N.
func WithDeputy(n int) Option { return func(c *config) { c.deputy = n } }

// WithThreads sets the size of ModeThreads' pool (default DefaultThreads, >= 1): the most
// pread/pwrite calls, and so OS threads, at work at once.
func WithThreads(n int) Option { return func(c *config) { c.threads = n } }

// WithPageCacheFirst sets whether a read of a file opened without O_DIRECT is first tried on
// the caller's goroutine with preadv2(2) RWF_NOWAIT (Linux 4.14), which copies from the page
// cache and returns EAGAIN instead of waiting for the device; only what is not cached goes to
// the ring. Default true: a ring round trip costs more than the read it replaces when the
// data is cached. The call never waits for I/O, so it holds no OS thread.
func WithPageCacheFirst(on bool) Option { return func(c *config) { c.pageFirst = on } }

// WithRegisteredFiles sets whether the ring's files go in its registered-file table
// (IORING_REGISTER_FILES2 sparse, Linux 5.19), which saves the kernel a file lookup per
// operation (default true; kernels without sparse tables use plain fds).
func WithRegisteredFiles(on bool) Option { return func(c *config) { c.regFiles = on } }

func defaultConfig() config {
	return config{mode: ModeAuto, entries: DefaultEntries, sqIdle: DefaultSQIdle, sqCPU: -1,
		deputy: DefaultDeputy, threads: DefaultThreads, pageFirst: true, regFiles: true}
}

// validate checks the options; errors wrap unix.EINVAL and name the option.
func (c *config) validate() error {
	known := false
	for _, m := range Modes() {
		known = known || m == c.mode
	}
	switch {
	case !known:
		return fmt.Errorf("fileio: WithMode(%q): unknown mode (known: %v): %w", c.mode, Modes(), unix.EINVAL)
	case c.entries < 1 || c.entries > 32768:
		return fmt.Errorf("fileio: WithEntries(%d): must be 1..32768: %w", c.entries, unix.EINVAL)
	case c.deputy < 1:
		return fmt.Errorf("fileio: WithDeputy(%d): must be >= 1: %w", c.deputy, unix.EINVAL)
	case c.threads < 1:
		return fmt.Errorf("fileio: WithThreads(%d): must be >= 1: %w", c.threads, unix.EINVAL)
	case c.sqIdle < 0:
		return fmt.Errorf("fileio: WithSQIdle(%v): must be >= 0: %w", c.sqIdle, unix.EINVAL)
	}
	return nil
}
