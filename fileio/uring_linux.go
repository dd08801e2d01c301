package fileio

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/rawsys"
	"github.com/ringev/ringev/uring"
)

// The io_uring engine. One goroutine owns the ring, locked to its OS thread (SINGLE_ISSUER and
// DEFER_TASKRUN accept only the thread that created the ring) in every mode but ModeNetpoll.
// Callers push records on a lock-free stack and, when the owner sleeps, wake it through an
// eventfd. Each turn the owner takes everything pushed since the last one, prepares an SQE per
// operation, submits them with one io_uring_enter(2), and completes what the CQ holds; it
// sleeps only when a turn found nothing to do: in io_uring_enter, on a read of the eventfd in
// the ring, or, in ModeNetpoll, in Go's netpoller until the eventfd, which the ring signals for
// its completions (IORING_REGISTER_EVENTFD), is written again.

// user_data of the owner's own requests; an operation's is its slot and generation (the top
// 16 bits 0, clear of uring.DeputyTag).
const (
	udWake    uint64 = 1 << 48 // the eventfd read
	udCancel  uint64 = 2 << 48 // an IORING_OP_ASYNC_CANCEL
	udTagMask uint64 = 0xffff << 48
)

// sqFullPoll is how long the owner sleeps when operations wait for SQ entries that an SQ
// thread has yet to consume.
const sqFullPoll = 50 * time.Microsecond

// submitter is what the owner needs of *uring.Ring and *uring.Deputy.
type submitter interface {
	GetSQE() *uring.SQE
	Submit() (int, error)
	SubmitAndWaitTimeout(n uint32, timeout time.Duration) (int, error)
	PeekCQE() *uring.CQE
	CQESeen()
}

type uringEngine struct {
	// Shared with callers.
	q        opStack // operations
	cancels  opStack // cancel requests (cnext)
	sleeping atomic.Int32
	efd      int
	cancelFn func(*op)
	efile    *os.File // ModeNetpoll: the eventfd, nonblocking, on Go's netpoller

	// ModeNetpoll, owner-only: the eventfd's raw connection and the test that its wait
	// runs (one func value, made once).
	erc     syscall.RawConn
	hasWork func(uintptr) bool

	ringOps, submits, waits, wakeups, cancelsN, depSQEs atomic.Uint64

	// Owner-only.
	r        *Ring
	mode     Mode
	ring     *uring.Ring
	dep      *uring.Deputy
	sq       submitter
	wakeBuf  [8]byte // the eventfd read's buffer (the engine is on the heap)
	wakeOn   bool    // the eventfd read is in the kernel
	slots    []*op
	gens     []uint16
	free     []int32
	inflight int
	maxIn    int
	prepared int
	pendHead *op
	pendTail *op
	fileFree []int32     // free registered-file slots; nil without a table
	sqFull   bool        // the last fill found no free SQ entry
	cancelQ  []cancelReq // cancels waiting for SQ entries
	closing  bool
	shutdown *op           // the Close waiting for the owner to finish
	resume   chan struct{} // kindCtlPause waits on it (tests)
	fatal    error
}

// startUring starts the owner goroutine and waits until it has set up the ring.
func startUring(r *Ring, mode Mode) (*uringEngine, error) {
	e := &uringEngine{r: r, mode: mode, efd: -1}
	e.cancelFn = e.pushCancel
	ready := make(chan error, 1)
	go e.run(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return e, nil
}

func (e *uringEngine) run(ready chan<- error) {
	if e.mode != ModeNetpoll {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if err := e.setup(); err != nil {
		e.teardown()
		ready <- err
		return
	}
	ready <- nil
	e.loop()
	e.teardown()
	if e.shutdown != nil {
		complete(e.shutdown, 0)
	}
}

// setup creates the ring for e.mode and checks that io_uring_enter works on it.
func (e *uringEngine) setup() error {
	c := e.r.cfg
	entries := uint32(c.entries)
	opts := []uring.Option{uring.WithEntries(entries), uring.WithCQEntries(4 * entries)}
	what := "io_uring"
	switch e.mode {
	case ModePlain:
		opts = append(opts, uring.WithFlags(0))
		what += " without setup flags"
	case ModeNetpoll:
		opts = append(opts, uring.WithFlags(0))
		what += " without setup flags (netpoll owner)"
	case ModeDeferTaskrun:
		opts = append(opts, uring.WithFlags(uring.SetupSingleIssuer|uring.SetupDeferTaskrun))
		what += " with SINGLE_ISSUER|DEFER_TASKRUN (6.1)"
	case ModeSQPoll, ModeDeputy:
		opts = append(opts, uring.WithSQPoll(c.sqIdle))
		what += " with SQPOLL"
		if c.sqCPU >= 0 {
			opts = append(opts, uring.WithSQThreadCPU(c.sqCPU))
			what += fmt.Sprintf(", its thread on CPU %d (WithSQThreadCPU(%d))", c.sqCPU, c.sqCPU)
		}
	}
	var err error
	if e.ring, err = uring.New(opts...); err != nil {
		return fmt.Errorf("fileio: %s: %w", what, err)
	}
	e.sq = e.ring
	if e.mode == ModeDeputy {
		if e.dep, err = uring.NewDeputy(e.ring, c.deputy); err != nil {
			return fmt.Errorf("fileio: deputy submission (N %d): %w", c.deputy, err)
		}
		e.sq = e.dep
	}
	if e.mode != ModeNetpoll {
		// Saves a file lookup per enter where the kernel has it (5.18). The registration
		// is the thread's: an owner that moves between threads cannot use it.
		_ = e.ring.RegisterRingFd()
	}
	// A NOP must complete: a seccomp filter may allow io_uring_setup and deny io_uring_enter.
	sqe := e.sq.GetSQE()
	sqe.PrepNop()
	sqe.SetUserData(udCancel)
	if _, err := e.sq.SubmitAndWaitTimeout(1, 5*time.Second); err != nil {
		return fmt.Errorf("fileio: %s: a NOP through the new ring: %w", what, err)
	}
	for cqe := e.sq.PeekCQE(); cqe != nil; cqe = e.sq.PeekCQE() {
		e.sq.CQESeen()
	}
	if e.mode == ModeNetpoll {
		if e.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
			return fmt.Errorf("fileio: eventfd: %w", err)
		}
		if err := e.ring.RegisterEventfd(e.efd, false); err != nil {
			return fmt.Errorf("fileio: %s: register eventfd %d: %w", what, e.efd, err)
		}
		// A nonblocking fd goes on the netpoller: a wait for it parks the goroutine,
		// not the thread.
		e.efile = os.NewFile(uintptr(e.efd), "fileio-eventfd")
		if e.erc, err = e.efile.SyscallConn(); err != nil {
			return fmt.Errorf("fileio: eventfd %d: %w", e.efd, err)
		}
		e.hasWork = func(uintptr) bool {
			return e.sleeping.Load() == 0 || !e.q.empty() || !e.cancels.empty() ||
				e.ring.CQReady() > 0 || e.ring.CQOverflowPending()
		}
	} else if e.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("fileio: eventfd: %w", err)
	}
	cq := int(e.ring.CQEntries())
	e.maxIn = cq - min(16, cq/2) // room in the CQ for the wake-up read and cancels
	e.slots = make([]*op, 0, e.maxIn)
	if c.regFiles && e.registerFileTable() == nil {
		e.fileFree = make([]int32, DefaultFileSlots)
		for i := range e.fileFree {
			e.fileFree[i] = int32(DefaultFileSlots - 1 - i)
		}
	}
	return nil
}

// rings returns the rings that registrations go to (both of a Deputy: an operation may run on
// either).
func (e *uringEngine) rings() []*uring.Ring {
	if e.dep != nil {
		return []*uring.Ring{e.ring, e.dep.Companion()}
	}
	return []*uring.Ring{e.ring}
}

func (e *uringEngine) registerFileTable() error {
	for _, rr := range e.rings() {
		if err := rr.RegisterFilesSparse(DefaultFileSlots); err != nil {
			return err
		}
	}
	return nil
}

// teardown releases the ring, the deputy and the eventfd, once nothing is in the kernel.
func (e *uringEngine) teardown() {
	if e.dep != nil {
		e.dep.Close()
	}
	if e.ring != nil {
		e.ring.Close()
	}
	switch {
	case e.efile != nil:
		e.efile.Close()
	case e.efd >= 0:
		unix.Close(e.efd)
	}
}

// queue pushes o and wakes the owner if it sleeps.
func (e *uringEngine) queue(o *op) {
	e.q.push(o, linkNext)
	e.wake()
}

func (e *uringEngine) pushCancel(o *op) {
	e.cancels.push(o, linkCancel)
	e.wake()
}

func (e *uringEngine) canceler() func(*op) { return e.cancelFn }

// one is what a wake-up writes to the eventfd.
var one = [8]byte{1}

// wake writes the eventfd when the owner sleeps (or is about to): one write per sleep, by
// whoever clears the flag. The owner sets the flag, then looks at the stacks; a caller pushes,
// then looks at the flag; sequentially consistent atomics make one of them see the other.
func (e *uringEngine) wake() {
	if e.sleeping.Load() == 1 && e.sleeping.CompareAndSwap(1, 0) {
		e.wakeups.Add(1)
		// An eventfd write cannot block or fail short of 2^64-2 unread wake-ups (ModeNetpoll
		// never reads the counter: at a billion a second that takes 584 years).
		rawsys.Syscall(unix.SYS_WRITE, uintptr(e.efd), uintptr(unsafe.Pointer(&one[0])), 8)
	}
}

func (e *uringEngine) control(o *op) error {
	o.state.Store(stQueued)
	e.queue(o)
	<-o.done
	return o.err
}

func (e *uringEngine) stats() Stats {
	s := Stats{RingOps: e.ringOps.Load(), Enters: e.submits.Load() + e.waits.Load(), Wakeups: e.wakeups.Load(),
		Cancels: e.cancelsN.Load(), DeputySQEs: e.depSQEs.Load()}
	return s
}

// loop is the owner's work until shutdown.
func (e *uringEngine) loop() {
	for {
		worked := e.take()
		if e.fill() {
			worked = true
		}
		// CQEs that found the CQ full wait in the kernel's overflow list until an enter
		// with GETEVENTS (which Submit passes then) moves them in; the other modes' waits
		// do, ModeNetpoll's netpoller wait does not.
		if e.prepared > 0 || (e.efile != nil && e.ring.CQOverflowPending()) {
			e.submit()
		}
		if e.reap() > 0 {
			worked = true
		}
		if e.closing && e.inflight == 0 && e.pendHead == nil && e.prepared == 0 && len(e.cancelQ) == 0 {
			e.quiesce()
			return
		}
		if worked {
			continue
		}
		e.sleeping.Store(1)
		if !e.q.empty() || !e.cancels.empty() {
			e.sleeping.Store(0)
			continue
		}
		e.waits.Add(1)
		if e.efile != nil {
			e.waitNetpoll()
			continue
		}
		if e.fatal != nil {
			// No ring to wait on: the eventfd itself wakes the owner.
			var b [8]byte
			unix.Read(e.efd, b[:])
			e.sleeping.Store(0)
			continue
		}
		// SQEs the deputy staged before the eventfd read wait for SQ entries; the read
		// itself, staged by armWake, goes to the companion ring's SQ at the wait's
		// submission (that SQ is empty between submissions).
		held := e.dep != nil && e.dep.Staged() > 0
		e.armWake()
		wait := time.Duration(-1)
		if e.sqFull || !e.wakeOn || held {
			// An SQ thread frees SQ entries without posting CQEs, and a caller cannot
			// wake an owner whose eventfd read found no SQ entry (or waits in the
			// deputy's staging behind SQEs that found none): look again soon.
			wait = sqFullPoll
		}
		_, err := e.sq.SubmitAndWaitTimeout(1, wait)
		e.sleeping.Store(0)
		e.prepared = 0
		if e.dep != nil {
			e.depSQEs.Store(e.dep.Stats().DeputySQEs)
		}
		switch {
		case err == nil, errors.Is(err, unix.ETIME), errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EOPNOTSUPP) && wait >= 0:
			time.Sleep(wait) // no timed wait before Linux 5.11 (IORING_FEAT_EXT_ARG)
		default:
			e.fail(err)
		}
	}
}

// waitNetpoll is ModeNetpoll's sleep: a wait in Go's netpoller for the eventfd that the ring
// signals when it posts CQEs and callers write when they queue. The counter is never read:
// each signal and each write is a new edge for the netpoller (epoll, EPOLLET), whatever the
// counter holds. RawConn.Read forgets the edges seen before it starts, then asks hasWork, then
// parks until the next edge and asks again. hasWork looks where every edge comes from: the
// sleeping flag (a caller that clears it writes the eventfd after, so a 0 means a wake-up
// whose edge may have been forgotten, and whose operation may already be served: the owner
// must not sleep on with the flag clear, or no later caller would write), the stacks, and
// the CQ. So a wait makes no system call of its own (a read of the eventfd made one, and a
// second that found the counter 0). With the SQ full (the kernel refused a submission) it
// sleeps sqFullPoll instead and looks again.
func (e *uringEngine) waitNetpoll() {
	if e.sqFull {
		time.Sleep(sqFullPoll)
	} else if err := e.erc.Read(e.hasWork); err != nil {
		e.fail(fmt.Errorf("fileio: wait for eventfd %d: %w", e.efd, err))
		time.Sleep(sqFullPoll) // no hot loop on a broken eventfd
	}
	e.sleeping.Store(0)
}

// take handles everything pushed since the last turn; it reports whether there was any.
func (e *uringEngine) take() bool {
	worked := false
	for o := e.q.takeAll(linkNext); o != nil; {
		next := o.next // o may be completed, and reused by its caller, below
		o.next = nil
		e.take1(o)
		o = next
		worked = true
	}
	for o := e.cancels.takeAll(linkCancel); o != nil; {
		next := o.cnext
		o.cnext = nil
		e.cancel1(o)
		o = next
		worked = true
	}
	return worked
}

func (e *uringEngine) take1(o *op) {
	if !o.state.CompareAndSwap(stQueued, stOwned) {
		putOp(o) // dropped by its caller before the owner came to it
		return
	}
	if o.kind.control() {
		e.control1(o)
		return
	}
	if e.closing || e.fatal != nil || o.file.refs.Load()&closedBit != 0 {
		e.finish(o, resClosed)
		return
	}
	// Pending, in order.
	o.pprev, o.pnext = e.pendTail, nil
	if e.pendTail != nil {
		e.pendTail.pnext = o
	} else {
		e.pendHead = o
	}
	e.pendTail = o
}

// repend puts o back at the head of the pending list.
func (e *uringEngine) repend(o *op) {
	o.pprev, o.pnext = nil, e.pendHead
	if e.pendHead != nil {
		e.pendHead.pprev = o
	} else {
		e.pendTail = o
	}
	e.pendHead = o
}

func (e *uringEngine) unpend(o *op) {
	if o.pprev != nil {
		o.pprev.pnext = o.pnext
	} else {
		e.pendHead = o.pnext
	}
	if o.pnext != nil {
		o.pnext.pprev = o.pprev
	} else {
		e.pendTail = o.pprev
	}
	o.pprev, o.pnext = nil, nil
}

// finish completes an operation the owner took but did not submit.
func (e *uringEngine) finish(o *op, res int32) {
	complete(o, res)
}

// cancel1 handles a caller's cancel request for o.
func (e *uringEngine) cancel1(o *op) {
	o.cancelPopped = true
	switch {
	case o.cqeSeen:
		o.state.Store(stDone)
		o.done <- struct{}{}
	case o.slot >= 0:
		e.submitCancel(e.userData(o.slot), 0)
	default: // still pending
		e.unpend(o)
		complete(o, -int32(unix.ECANCELED))
	}
}

func (e *uringEngine) userData(slot int32) uint64 {
	return uint64(e.gens[slot])<<32 | uint64(uint32(slot))
}

// submitCancel queues an IORING_OP_ASYNC_CANCEL of target (flags: uring.AsyncCancel*); fill
// prepares it, before any operation, as soon as an SQ entry is free.
func (e *uringEngine) submitCancel(target uint64, flags uint32) {
	e.cancelQ = append(e.cancelQ, cancelReq{target, flags})
}

// cancelReq is a cancel waiting for an SQ entry.
type cancelReq struct {
	target uint64
	flags  uint32
}

// flushCancels prepares the queued cancels while SQ entries are free.
func (e *uringEngine) flushCancels() {
	for len(e.cancelQ) > 0 {
		sqe := e.getSQE()
		if sqe == nil {
			e.sqFull = true
			return
		}
		c := e.cancelQ[0]
		e.cancelQ = e.cancelQ[1:]
		sqe.PrepCancel(c.target, c.flags)
		sqe.SetUserData(udCancel)
		e.prepared++
		e.cancelsN.Add(1)
	}
	e.cancelQ = e.cancelQ[:0:0]
}

// getSQE returns a free SQE, submitting what is prepared to make room; nil if the SQ stays
// full.
func (e *uringEngine) getSQE() *uring.SQE {
	if sqe := e.sq.GetSQE(); sqe != nil {
		return sqe
	}
	e.submit()
	return e.sq.GetSQE()
}

// fill prepares an SQE for each pending operation while there is room in the kernel.
func (e *uringEngine) fill() bool {
	worked, count := false, 0
	e.sqFull = false
	if len(e.cancelQ) > 0 {
		worked = true
		e.flushCancels()
	}
	for e.pendHead != nil && e.inflight < e.maxIn && !e.sqFull {
		sqe := e.getSQE()
		if sqe == nil {
			e.sqFull = true
			break
		}
		o := e.pendHead
		e.unpend(o)
		var slot int32
		if n := len(e.free); n > 0 {
			slot = e.free[n-1]
			e.free = e.free[:n-1]
			e.slots[slot] = o
		} else {
			slot = int32(len(e.slots))
			e.slots = append(e.slots, o)
			e.gens = append(e.gens, 0)
		}
		o.slot = slot
		e.prep(sqe, o)
		sqe.SetUserData(e.userData(slot))
		e.inflight++
		e.prepared++
		worked = true
		count++
	}
	if worked {
		e.ringOps.Add(uint64(count))
	}
	return worked
}

// prep fills sqe for o.
func (e *uringEngine) prep(sqe *uring.SQE, o *op) {
	f := o.file
	fd := f.fd
	if f.slot >= 0 {
		fd = int(f.slot)
	}
	off := uint64(o.off)
	switch o.kind {
	case kindRead:
		sqe.PrepRead(fd, o.buf, off)
	case kindWrite:
		sqe.PrepWrite(fd, o.buf, off)
	case kindReadv:
		sqe.PrepReadv(fd, o.iovs, off)
	case kindWritev:
		sqe.PrepWritev(fd, o.iovs, off)
	case kindReadFixed:
		sqe.PrepReadFixed(fd, o.buf, off, o.index)
	case kindWriteFixed:
		sqe.PrepWriteFixed(fd, o.buf, off, o.index)
	case kindFsync:
		sqe.PrepFsync(fd, 0)
	case kindFdatasync:
		sqe.PrepFsync(fd, uring.FsyncDatasync)
	}
	if f.slot >= 0 {
		sqe.Flags |= uring.SQEFixedFile
	}
}

// submit hands the prepared SQEs to the kernel.
func (e *uringEngine) submit() {
	e.submits.Add(1)
	if _, err := e.sq.Submit(); err != nil && !errors.Is(err, unix.EINTR) {
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EAGAIN) {
			return // retried on the next turn, after reaping
		}
		e.fail(err)
	}
	e.prepared = 0
}

// reap completes the operations whose CQEs are in; it returns how many CQEs it saw.
func (e *uringEngine) reap() int {
	n := 0
	for cqe := e.sq.PeekCQE(); cqe != nil; cqe = e.sq.PeekCQE() {
		ud, res := cqe.UserData, cqe.Res
		e.sq.CQESeen()
		n++
		switch {
		case ud == udWake:
			e.wakeOn = false
			continue
		case ud&udTagMask != 0:
			continue // a cancel's own result
		}
		slot := int32(uint32(ud))
		if slot < 0 || int(slot) >= len(e.slots) || uint64(e.gens[slot]) != ud>>32 || e.slots[slot] == nil {
			continue // cannot happen: a completion for no operation
		}
		o := e.slots[slot]
		e.slots[slot] = nil
		e.gens[slot]++
		e.free = append(e.free, slot)
		o.slot = -1
		e.inflight--
		if res == -int32(unix.ECANCELED) && e.efile != nil && !e.closing && o.file.refs.Load()&closedBit == 0 &&
			o.state.Load() == stOwned {
			// ModeNetpoll: nobody cancelled it, so the thread that submitted it exited
			// (a goroutine ended locked to it) and took its io-wq work along before
			// it started: submit it again, first.
			e.repend(o)
			continue
		}
		if (res == -int32(unix.ECANCELED) || res == -int32(unix.EINTR)) && (e.closing || o.file.refs.Load()&closedBit != 0) {
			res = resClosed
		}
		complete(o, res)
	}
	return n
}

// armWake puts the eventfd read in the kernel, if it is not there.
func (e *uringEngine) armWake() {
	if e.wakeOn {
		return
	}
	var sqe *uring.SQE
	if e.dep != nil {
		// On the companion ring: the read's completion, task work of the task that
		// submitted it, would otherwise wake the SQ thread just before the owner
		// submits, and the deputy would never submit.
		if sqe = e.dep.GetCompanionSQE(); sqe == nil {
			e.submit()
			sqe = e.dep.GetCompanionSQE()
		}
	} else {
		sqe = e.getSQE()
	}
	if sqe == nil {
		return
	}
	sqe.PrepRead(e.efd, e.wakeBuf[:], 0)
	sqe.SetUserData(udWake)
	e.wakeOn = true
	e.prepared++
}

// quiesce completes the eventfd read (by writing the eventfd) so that nothing of the engine's
// is in the kernel when the ring closes.
func (e *uringEngine) quiesce() {
	if !e.wakeOn || e.fatal != nil {
		return
	}
	rawsys.Syscall(unix.SYS_WRITE, uintptr(e.efd), uintptr(unsafe.Pointer(&one[0])), 8)
	deadline := time.Now().Add(5 * time.Second)
	for e.wakeOn && time.Now().Before(deadline) {
		if _, err := e.sq.SubmitAndWaitTimeout(1, time.Until(deadline)); err != nil && !errors.Is(err, unix.ETIME) {
			return
		}
		e.reap()
	}
}

// fail ends the engine after an error of the ring itself: every operation it holds fails
// with resClosed, and so does every later one (the ring cannot be trusted any more).
func (e *uringEngine) fail(err error) {
	if e.fatal == nil {
		e.fatal = err
	}
	for e.pendHead != nil {
		o := e.pendHead
		e.unpend(o)
		complete(o, resClosed)
	}
	for i, o := range e.slots {
		if o != nil {
			e.slots[i] = nil
			e.inflight--
			o.slot = -1
			complete(o, resClosed)
		}
	}
	e.prepared = 0
}

// control1 runs a control operation on the owner's thread.
func (e *uringEngine) control1(o *op) {
	f := o.file
	switch o.kind {
	case kindCtlRegisterFile:
		if n := len(e.fileFree); n > 0 {
			slot := e.fileFree[n-1]
			fds := []int32{int32(f.fd)}
			ok := true
			for _, rr := range e.rings() {
				if _, err := rr.UpdateFiles(uint32(slot), fds); err != nil {
					o.err, ok = err, false
				}
			}
			if !ok {
				for _, rr := range e.rings() {
					rr.UpdateFiles(uint32(slot), []int32{-1}) // no slot half set
				}
			} else {
				e.fileFree = e.fileFree[:n-1]
				f.slot = slot
				f.registered.Store(true)
			}
		}
	case kindCtlUnregisterFile:
		if f.slot >= 0 {
			for _, rr := range e.rings() {
				if _, err := rr.UpdateFiles(uint32(f.slot), []int32{-1}); err != nil {
					o.err = err
				}
			}
			e.fileFree = append(e.fileFree, f.slot)
			f.slot = -1
			f.registered.Store(false)
		}
	case kindCtlCancelFile:
		for p := e.pendHead; p != nil; {
			next := p.pnext
			if p.file == f {
				e.unpend(p)
				complete(p, resClosed)
			}
			p = next
		}
		for slot, p := range e.slots {
			if p != nil && p.file == f {
				e.submitCancel(e.userData(int32(slot)), 0)
			}
		}
	case kindCtlBuffers:
		for _, rr := range e.rings() {
			if err := rr.RegisterBuffers(o.bufs); err != nil {
				o.err = fmt.Errorf("fileio: fixed buffers: %w", err)
				break
			}
		}
	case kindCtlPause:
		complete(o, 0)
		<-e.resume // a test holds the owner here
		return
	case kindCtlShutdown:
		e.closing = true
		e.shutdown = o
		for e.pendHead != nil {
			p := e.pendHead
			e.unpend(p)
			complete(p, resClosed)
		}
		if e.inflight > 0 {
			e.submitCancel(0, uring.AsyncCancelAny|uring.AsyncCancelAll)
		}
		return // completed when the owner is done
	}
	complete(o, 0)
}

// control reports whether k is run by the owner itself, never by the kernel.
func (k opKind) control() bool { return k >= kindCtlRegisterFile }

// opStack is a multi-producer stack of records, taken whole by its single consumer (so there
// is no ABA problem: nothing is popped singly). A record is linked through one of its link
// fields (next for the operations, cnext for the cancel requests).
type opStack struct {
	head atomic.Pointer[op]
}

// linkNext and linkCancel select a record's link field.
func linkNext(o *op) **op   { return &o.next }
func linkCancel(o *op) **op { return &o.cnext }

// push adds o through its link; it reports whether the stack was empty.
func (s *opStack) push(o *op, link func(*op) **op) bool {
	for {
		old := s.head.Load()
		*link(o) = old
		if s.head.CompareAndSwap(old, o) {
			return old == nil
		}
	}
}

// takeAll empties the stack and returns its records oldest first, linked through link.
func (s *opStack) takeAll(link func(*op) **op) *op {
	h := s.head.Swap(nil)
	var prev *op
	for h != nil {
		n := *link(h)
		*link(h) = prev
		prev, h = h, n
	}
	return prev
}

func (s *opStack) empty() bool { return s.head.Load() == nil }
