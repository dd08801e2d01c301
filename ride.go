//go:build unix

package ringev

// This file decides, on the uring backend, whether a handler's I/O through Loop.ReadNonblocking
// and WriteNonblocking rides the ring with the loop's next look (rideIO, once.go) or is read(2)
// and write(2) (docs/design.md, "Which path a handler's I/O takes"). The ring path spares a
// syscall per look and costs a trip through the ring (SQEs, CQEs, the kernel's io_kiocb and task
// work): it wins where a syscall's entry costs more than that trip (page-table isolation:
// ~0.6-1.1 µs a syscall) and loses where syscalls are cheap (~170 ns). So the loop measures:
//
//   - at New, a calibration times both paths on a scratch pipe and epoll set (a few dozen of
//     each, the fastest batch of each counts) and picks the first path;
//   - while it runs, the loop thread's CPU time (CLOCK_THREAD_CPUTIME_ID, read once per window,
//     never per event) per fd handler run is sampled over windows of rideWindow runs; a probe
//     runs rideProbeLen windows on each path, interleaved, and the loop takes the other path
//     when that path's median is cheaper by rideMargin in rideConfirm probes in a row. Probes
//     come rideMinGap windows apart at first and after a switch, twice as far apart after each
//     probe that keeps the path, up to rideMaxGap, so that a change of phase is followed.
//
// rideDecider is the decision, a pure function of the costs it is given (ride_test.go).

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
	"golang.org/x/sys/unix"
)

// Names of the paths a handler's I/O through the loop's methods can take (WithIOPath,
// Loop.IOPath).
const (
	// IOPathAuto lets the loop choose, and change, the path by measuring both (the default).
	IOPathAuto = "auto"
	// IOPathRing sends a handler's I/O through the uring backend's ring with the loop's next
	// look at its fds, when the handler has used up the loop's readiness: one io_uring_enter(2)
	// where read(2) and the next epoll_wait(2) make two.
	IOPathRing = "ring"
	// IOPathSyscall makes a handler's I/O read(2) or write(2), as the package functions do.
	IOPathSyscall = "syscall"
)

// ErrUnknownIOPath is returned (wrapped, with the name) by New for a WithIOPath name other than
// IOPathAuto, IOPathRing and IOPathSyscall.
var ErrUnknownIOPath = errors.New("ringev: unknown I/O path")

// WithIOPath chooses the path of a handler's I/O through Loop.ReadNonblocking and
// WriteNonblocking on the uring backend: IOPathAuto ("auto", the default: the loop measures
// both paths and takes the cheaper, see Loop.IOPath), IOPathRing ("ring": always through the
// ring with the loop's next look, when the handler has used up the loop's readiness) or
// IOPathSyscall ("syscall": always read(2)/write(2)). Where no look can ride (the other
// backends, WithFreshReadiness, kernels without IORING_OP_EPOLL_WAIT, Linux 6.15) the I/O is
// read(2)/write(2) whatever the choice, and Loop.IOPathReason says why. New returns an error
// wrapping ErrUnknownIOPath for any other name.
func WithIOPath(path string) Option {
	return func(o *options) { o.ioPath = path }
}

// IOPath returns the path a handler's I/O through Loop.ReadNonblocking and WriteNonblocking
// takes now when the handler has used up the loop's readiness: IOPathRing or IOPathSyscall
// (never IOPathAuto). With IOPathAuto it can change while the loop runs; IOPathReason says why
// it is what it is. Before the ring's first wait has completed, the ring path's I/O is
// read(2)/write(2) whatever IOPath says (no look has been made to ride with). The loop changes
// it as it runs, so read it on the loop's goroutine, or through Post.
func (l *Loop) IOPath() string {
	if l.rideUsable() && l.ride.ringIO {
		return IOPathRing
	}
	return IOPathSyscall
}

// IOPathReason says why IOPath is what it is: the option that forced it (`WithIOPath("ring")`),
// why no look can ride (for example "the epoll backend has no ring: ..."), or, with IOPathAuto
// on the uring backend, a sentence that starts "auto: " and the path, and gives the costs the
// loop measured: the loop thread's CPU time per fd handler run on each path in ns (medians of
// the last probe's windows; "not measured while running yet" before the first probe ends), the
// start calibration's ns per one-byte read and look on each path, and the numbers of probes
// and switches so far. For example: "auto: syscall: 1990 ns per fd handler run through the
// ring, 1650 ns with read(2)/write(2) (the loop thread's CPU time, last probe); at start 1560 ns
// per read and look through the ring, 1270 ns as read(2)+epoll_wait(2); 14 probes, 1 switches".
// Read it on the loop's goroutine, or through Post, as IOPath.
func (l *Loop) IOPathReason() string {
	b := l.ride
	switch {
	case l.closed:
		return "the loop is closed: its I/O methods are read(2)/write(2)"
	case b == nil:
		return "the " + l.beName + " backend has no ring: handler I/O is read(2)/write(2)"
	case l.fresh:
		return "WithFreshReadiness: the loop would not use a look riding with the I/O, so handler I/O is read(2)/write(2)"
	case b.fallback:
		return "this kernel has no IORING_OP_EPOLL_WAIT (Linux 6.15), so no look can ride with the I/O: handler I/O is read(2)/write(2)"
	case !b.ctl.auto:
		return fmt.Sprintf("WithIOPath(%q)", l.IOPath())
	}
	return b.ctl.reason(b.ringIO)
}

// rideUsable reports whether a look can ride with a handler's I/O on this loop at all.
func (l *Loop) rideUsable() bool {
	return l.ride != nil && !l.fresh && !l.ride.fallback
}

// ioPath is a path of a handler's I/O: pathSyscall or pathRing (an index of per-path arrays).
type ioPath uint8

const (
	pathSyscall ioPath = 0
	pathRing    ioPath = 1
)

func (p ioPath) String() string {
	if p == pathRing {
		return IOPathRing
	}
	return IOPathSyscall
}

// pathOf is pathRing for true.
func pathOf(ring bool) ioPath {
	if ring {
		return pathRing
	}
	return pathSyscall
}

const (
	// rideWindow is the number of fd handler runs in one measuring window. At 1-4 µs a run a
	// window lasts 0.5-2 ms, long enough that its one clock read (a syscall, 0.6-1.5 µs) is
	// ~0.1 %, short enough that a probe ends within a few ms.
	rideWindow = 512
	// rideProbeLen is the number of windows a probe measures on each path (interleaved); the
	// median of them counts, so one disturbed window does not decide.
	rideProbeLen = 3
	// rideMargin: the other path is taken only when its median is this much cheaper (0.03 =
	// 3 %) than the current path's, in the same probe. Between two paths closer than that the
	// loop keeps the one it has: it loses less than the margin.
	rideMargin = 0.03
	// rideConfirm is the number of probes in a row in which the other path must win by
	// rideMargin before the loop switches: the second probe follows the first at once.
	rideConfirm = 2
	// rideMinGap and rideMaxGap bound the windows of the current path between two probes: the
	// gap starts at rideMinGap (and returns there after a switch) and doubles after each probe
	// that keeps the path. At rideMaxGap a probe's windows on the other path are ~1 % of all
	// windows, and a change of phase is noticed within ~300 windows (~0.2-0.6 s when busy).
	rideMinGap = 8
	rideMaxGap = 256
)

// rideDecider is the decision: fed the cost of each window (ns of the loop thread's CPU time per
// fd handler run) and the path it ran on, it returns the path of the next window. It reads no
// clock and has no side effects: ride_test.go drives it with given costs.
type rideDecider struct {
	cur   ioPath // the path chosen
	gap   int    // windows of cur between two probes now
	until int    // windows of cur left before the next probe
	probe int    // windows left in the probe under way; 0: none
	// samples[p][:nsamp[p]] are the costs of the probe's windows on path p.
	samples [2][rideProbeLen]float64
	nsamp   [2]int
	wins    int // probes in a row in which the other path was cheaper by rideMargin
	// For the reason: the medians of the last probe (0: no probe yet), the probes and
	// switches so far, and the windows run on each path.
	last     [2]float64
	probes   int
	switches int
	windows  [2]uint64
}

// newRideDecider starts on path start (the calibration's choice) and probes at its first window.
func newRideDecider(start ioPath) rideDecider {
	return rideDecider{cur: start, gap: rideMinGap}
}

// next is told the path a window ran on and its cost (ns per fd handler run; a cost that is not
// a positive number is not counted) and returns the path of the next window.
func (d *rideDecider) next(ran ioPath, cost float64) ioPath {
	d.windows[ran]++
	if d.probe > 0 {
		if n := d.nsamp[ran]; n < rideProbeLen && cost > 0 && !math.IsInf(cost, 0) {
			d.samples[ran][n] = cost
			d.nsamp[ran]++
		}
		d.probe--
		if d.probe == 0 {
			d.conclude()
			return d.cur
		}
		return d.probePath()
	}
	d.until--
	if d.until > 0 {
		return d.cur
	}
	d.probe = 2 * rideProbeLen
	d.nsamp = [2]int{}
	return d.probePath()
}

// probePath is the path of the probe's next window: the other path first, then alternating.
func (d *rideDecider) probePath() ioPath {
	if d.probe%2 == 0 {
		return d.cur ^ 1
	}
	return d.cur
}

// conclude compares the probe's medians: the other path is taken after rideConfirm probes in
// a row in which it was cheaper by rideMargin; otherwise the gap to the next probe doubles.
func (d *rideDecider) conclude() {
	other := d.cur ^ 1
	if d.nsamp[d.cur] == 0 || d.nsamp[other] == 0 {
		d.until, d.wins = d.gap, 0 // nothing to compare (no valid sample): try again later
		return
	}
	mc, mo := median(d.samples[d.cur][:d.nsamp[d.cur]]), median(d.samples[other][:d.nsamp[other]])
	d.last[d.cur], d.last[other] = mc, mo
	d.probes++
	if mo < mc*(1-rideMargin) {
		d.wins++
		if d.wins >= rideConfirm {
			d.cur, d.wins, d.gap = other, 0, rideMinGap
			d.switches++
			d.until = d.gap
			return
		}
		d.until = 1 // confirm with the next window
		return
	}
	d.wins = 0
	d.gap = min(2*d.gap, rideMaxGap)
	d.until = d.gap
}

// median of 1 to rideProbeLen costs.
func median(v []float64) float64 {
	var buf [rideProbeLen]float64
	s := buf[:copy(buf[:], v)]
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// calibratedPath is the first path of a loop whose calibration measured sysNs for a read(2) and
// an epoll_wait(2) and ringNs for the same read and look through the ring (ns, the fastest batch
// of each): the ring when it was cheaper by rideCalBias. 0 for either means not measured:
// read(2)/write(2).
func calibratedPath(sysNs, ringNs float64) ioPath {
	if sysNs > 0 && ringNs > 0 && ringNs < sysNs*(1-rideCalBias) {
		return pathRing
	}
	return pathSyscall
}

// rideCalBias: the calibration's trip through the ring runs less of the loop's code than a
// handler's I/O through rideIO does (and touches fewer pages), so the ring must be this much
// cheaper there (0.10 = 10 %) to be the first path. On a machine with ~170 ns syscalls the
// calibration saw the two paths within a few % of each other where the loop's windows then
// measured the ring 15-25 % dearer per fd handler run; with ~1 µs syscalls (slowsys 3000) it
// saw the ring ~30 % cheaper, the windows ~15 %.
const rideCalBias = 0.10

// rideCtl is the uring backend's measuring state for rideIO (the hot fields, ringIO and rideAt,
// sit with the backend's other hot fields).
type rideCtl struct {
	auto    bool // WithIOPath("auto"): measure and decide
	dec     rideDecider
	started bool   // a window is under way: winCPU and winRuns hold its start
	winCPU  int64  // the loop thread's CPU time at the window's start, ns
	winRuns uint64 // Loop.dispatch at the window's start
	clock   unix.Timespec
	clockOK bool // the thread CPU clock worked at least once
	// The calibration at New: ns per read with the next look, read(2)+epoll_wait(2) and
	// through the ring; calErr says why there is none.
	calSys, calRing float64
	calErr          string
	// Tests only (export_ride_test.go): window replaces rideWindow when > 0, and flip makes
	// every window end switch the path, whatever it cost.
	window uint64
	flip   bool
}

// reason is IOPathReason with IOPathAuto on a loop whose look can ride; ring is the path now.
func (c *rideCtl) reason(ring bool) string {
	var sb strings.Builder
	d := &c.dec
	fmt.Fprintf(&sb, "auto: %s: ", pathOf(ring))
	if d.probes > 0 {
		fmt.Fprintf(&sb, "%.0f ns per fd handler run through the ring, %.0f ns with read(2)/write(2) (the loop thread's CPU time, last probe)",
			d.last[pathRing], d.last[pathSyscall])
	} else {
		sb.WriteString("not measured while running yet")
	}
	if c.calErr != "" {
		fmt.Fprintf(&sb, "; no start calibration: %s", c.calErr)
	} else {
		fmt.Fprintf(&sb, "; at start %.0f ns per read and look through the ring, %.0f ns as read(2)+epoll_wait(2)", c.calRing, c.calSys)
	}
	fmt.Fprintf(&sb, "; %d probes, %d switches", d.probes, d.switches)
	return sb.String()
}

// rideState is what the core reads of a backend that can carry a handler's I/O with its next
// look at the fds (rider): the backend keeps the first three fields, the core the rest; rideIO
// reads them without a call.
type rideState struct {
	inflight bool // the backend's look is in the kernel (it found nothing yet): no other can ride
	worked   bool // a look through the backend completed once (the kernel has the op)
	fallback bool // no look can ride on this kernel (before Linux 6.15: no IORING_OP_EPOLL_WAIT)
	// ringIO: a handler's I/O that may ride goes through the backend (WithIOPath, the decision).
	ringIO bool
	// rideAt is the Loop.dispatch count at which the measuring window ends; math.MaxUint64 when
	// the path is not measured.
	rideAt uint64
	ctl    rideCtl // the measuring state and the decision
	// found is how many fds the backend's look found, written by ride when it completed with
	// fds ready (0: none, and a look that found nothing stays in the kernel: inflight); they
	// are events[:found], the backend's buffer until its next look: the core copies them at
	// once and sets found to 0. full = found == len(events): more may be ready.
	found  int32
	events []readyFd
}

// rider is implemented by a backend that can carry a handler's I/O and its next look at the fds
// in one system call (the uring backend: an SQE for the I/O and an IORING_OP_EPOLL_WAIT behind
// it, backend_uring_ride_linux.go). The core decides when an I/O may ride and which path is
// cheaper (this file, rideIO); the backend owns the SQEs and CQEs.
type rider interface {
	// rideShared returns the backend's rideState, which lives as long as the backend.
	rideShared() *rideState
	// ride makes op (OpRead or OpWrite) of p on fd at the file position, without waiting for
	// data or room, followed by the backend's look at its fds, in one system call that does not
	// wait, and waits (with the runtime's syscall bookkeeping) only for an I/O the kernel did not
	// finish at once. res is the I/O's result as a CQE's: bytes, or -errno (-EOPNOTSUPP: the
	// backend could not ask without waiting; read(2) or write(2) answers). What the look found
	// is in rideState.found and events. err wraps a failed enter's errno; p may then stay the
	// kernel's until the backend closes.
	ride(op Op, fd int, p []byte) (res int32, err error)
	// calibrateRide times a one-byte read followed by a look, as read(2)+epoll_wait(2) and as
	// ride makes it, on scratch fds, and returns the ns of each (the fastest batch's).
	calibrateRide() (sysNs, ringNs float64, err error)
}

// setupIOPath applies WithIOPath to the rider rd of a new loop: a forced path, or, with
// IOPathAuto, the start calibration and the decider. WithFreshReadiness and the fallback use no
// path (rideIO never rides there).
func setupIOPath(rd rider, path string, fresh bool) {
	b := rd.rideShared()
	b.rideAt = math.MaxUint64 // no measuring windows unless auto
	switch path {
	case IOPathRing:
		b.ringIO = true
		return
	case IOPathSyscall:
		return
	}
	c := &b.ctl
	c.auto = true
	if fresh || b.fallback {
		return
	}
	sys, ring, err := rd.calibrateRide()
	if err != nil {
		c.calErr = err.Error()
	}
	c.calSys, c.calRing = sys, ring
	c.dec = newRideDecider(calibratedPath(sys, ring))
	b.ringIO = c.dec.cur == pathRing
	b.rideAt = 0 // the first handler I/O starts the first window
}

// rideWindowEnd is called by rideIO at the first handler I/O that may ride once the window's
// fd handler runs are done: it reads the loop thread's CPU time, gives the window's cost per run
// to the decider and starts the next window on the path it returns.
//
//go:noinline
func (l *Loop) rideWindowEnd() {
	b := l.ride
	c := &b.ctl
	now, ok := threadCPU(&c.clock)
	if !ok {
		// No thread CPU clock: keep the path chosen so far, and measure no more.
		b.rideAt = math.MaxUint64
		if !c.clockOK {
			c.calErr += " (and no CLOCK_THREAD_CPUTIME_ID to measure while running)"
		}
		return
	}
	c.clockOK = true
	runs := l.dispatch
	if c.started && runs > c.winRuns {
		cost := float64(now-c.winCPU) / float64(runs-c.winRuns)
		ran := b.ringIO
		b.ringIO = c.dec.next(pathOf(ran), cost) == pathRing
		if c.flip {
			b.ringIO = !ran
		}
	}
	c.started = true
	c.winCPU, c.winRuns = now, runs
	window := uint64(rideWindow)
	if c.window > 0 {
		window = c.window
	}
	b.rideAt = runs + window
}

// threadCPU returns the calling thread's CPU time in ns (clock_gettime(2) of
// CLOCK_THREAD_CPUTIME_ID, which counts no time the thread sleeps or waits to run), written
// into ts; false if the clock failed. The loop's goroutine is locked to its thread (New).
func threadCPU(ts *unix.Timespec) (int64, bool) {
	_, e := rawsys.Syscall(sysClockGettime, clockThreadCPU, uintptr(unsafe.Pointer(ts)), 0)
	if e != 0 {
		return 0, false
	}
	return ts.Nano(), true
}
