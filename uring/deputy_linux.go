package uring

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// DeputyTag and DeputyTagMask reserve user_data values for the Deputy's own
// requests: a user_data u with u&DeputyTagMask == DeputyTag must not be used
// by callers of a Deputy (the halves of a duplicated cancel carry it).
const (
	DeputyTagMask uint64 = 0xffff_0000_0000_0000
	DeputyTag     uint64 = 0xde70_0000_0000_0000
)

// DeputyStats counts what a Deputy did since NewDeputy.
type DeputyStats struct {
	// Submits is the number of Submit calls that had staged SQEs.
	Submits uint64
	// Asleep is the number of those that found the SQ thread asleep
	// (IORING_SQ_NEED_WAKEUP set).
	Asleep uint64
	// DeputySQEs is the number of caller SQEs submitted through the
	// companion ring, in the caller's context.
	DeputySQEs uint64
	// SQPollSQEs is the number of caller SQEs handed to the SQPOLL ring.
	SQPollSQEs uint64
	// CompanionSQEs is the number of SQEs from GetCompanionSQE, all
	// submitted through the companion ring.
	CompanionSQEs uint64
	// Wakeups is the number of io_uring_enter(2) calls with
	// IORING_ENTER_SQ_WAKEUP the Deputy made itself (after a deputy
	// submission that left nothing for the SQPOLL ring).
	Wakeups uint64
	// Cancels is the number of cancel / poll-remove SQEs submitted to both
	// rings and merged into one CQE.
	Cancels uint64
}

// deputyCancel is one duplicated cancel: the caller's user_data and what the
// halves returned so far.
type deputyCancel struct {
	userData uint64
	all      bool // IORING_ASYNC_CANCEL_ALL: results are counts, summed
	halves   int  // CQEs still to come (2, 1, 0)
	res      [2]int32
}

// Deputy is an SQPOLL ring with deputy submission (docs/design.md, "Deputy
// submission"): Hao Xu's RFC "submit sqes in the original context when waking
// up sqthread", which the kernel never took, done in user space. It is not
// safe for concurrent use and follows the Ring's thread rule: create it and
// use it from one goroutine locked to its OS thread (runtime.LockOSThread).
//
// An SQPOLL ring whose SQ thread sleeps (IORING_SQ_NEED_WAKEUP) delays every
// submission by the thread's wake-up. A Deputy pairs such a ring with a
// companion ring without SQPOLL. SQEs are prepared in the Deputy's own staging
// array (GetSQE). Submit looks at NEED_WAKEUP once. When the SQ thread sleeps,
// up to N staged SQEs are copied to the companion ring and submitted at once
// by io_uring_enter(2), in the caller's own context; the rest go to the SQPOLL
// ring. Only then is the SQ thread woken: it does not contend with the
// deputy's submission, and is awake for what follows. When the thread is awake
// every SQE goes to the SQPOLL ring. A request that waits for an event (a
// poll, an eventfd read) is better staged with GetCompanionSQE: it always goes
// to the companion ring, so that its completion does not wake the SQ thread.
//
// The caller sees one completion stream (PeekCQE / CQESeen, the companion
// ring first) and waits on both rings at once (SubmitAndWaitTimeout: on the
// one ring that has requests in flight, or on an eventfd registered with
// both). Rules that keep "no SQE lost, none completed twice":
//
//   - A staged SQE is copied to exactly one ring (the copy is what the kernel
//     reads; the staging slot is reused only after the copy). SQEs that find
//     no room stay staged, in order, for the next Submit.
//   - A link chain (SQEIOLink / SQEIOHardlink) is never split between rings.
//   - IORING_OP_ASYNC_CANCEL and IORING_OP_POLL_REMOVE (the plain remove, not
//     the update form) outside a link chain are submitted to both rings, since
//     their target may be on either; the two CQEs are merged into one with the
//     caller's user_data, so cancellation reaches a request on either ring and
//     the caller gets exactly one CQE per SQE.
//
// Deputy submission is opt-in (NewDeputy with N >= 1) and never crosses
// thread groups: the companion ring is created by NewDeputy, its fd never
// leaves the Deputy, and the Deputy is ordinary process memory, so the
// deputy's io_uring_enter always runs in the process that created it (the
// RFC's same_thread_group() condition). With SINGLE_ISSUER (when the kernel
// grants it) the kernel further restricts it to the creating thread.
//
// IOSQE_IO_DRAIN and ordering between requests hold only within one ring.
//
// User data u with u&DeputyTagMask == DeputyTag is the Deputy's own (see
// DeputyTag).
type Deputy struct {
	ring *Ring // the SQPOLL ring (owned by the caller)
	comp *Ring // the companion ring without SQPOLL (owned by the Deputy)
	n    int   // at most n SQEs per Submit through comp
	efd  int   // eventfd registered with both rings
	pfd  [1]unix.PollFd

	staged  []SQE  // SQEs handed out by GetSQE, not yet copied to a ring
	pinned  []bool // staged[i] came from GetCompanionSQE
	nStaged int

	inflightRing int // requests on ring whose final CQE is not yet seen
	inflightComp int // same for comp

	// Duplicated cancels, indexed by the low 32 bits of their tag.
	cancels    []deputyCancel
	freeCancel []uint32

	// The CQE PeekCQE returned: from which ring, or the merged one.
	from      *Ring
	fromFinal bool // that CQE ends its request (no IORING_CQE_F_MORE)
	merged    CQE
	hasMerged bool

	stats DeputyStats
	open  bool
}

var (
	errDeputyClosed  = fmt.Errorf("uring: deputy is closed: %w", unix.EBADF)
	errDeputyTimeout = fmt.Errorf("uring: deputy wait: %w", unix.ETIME)
)

// companionTrials are the setup flags tried for the companion ring, best
// first. DEFER_TASKRUN is left out on purpose: its completions would appear
// (and signal the eventfd) only when this thread enters the companion ring
// with GETEVENTS, not while it waits on the SQPOLL ring.
var companionTrials = [...]uint32{
	SetupSingleIssuer | SetupCoopTaskrun | SetupTaskrunFlag, // 6.0
	SetupCoopTaskrun | SetupTaskrunFlag,                     // 5.19
	0,
}

// NewDeputy turns on deputy submission for r, an SQPOLL ring
// (IORING_SETUP_SQPOLL): at most n SQEs per Submit (n >= 1) go through a new
// companion ring of the same SQ size when the SQ thread sleeps. The calling
// goroutine must be locked to its OS thread. r stays owned by the caller and
// must outlive the Deputy; from now on submit and reap only through the
// Deputy.
//
// Errors: unix.EINVAL (r is not an SQPOLL ring, is closed, or n < 1), or the
// errno of io_uring_setup(2), eventfd(2) or io_uring_register(2)
// (IORING_REGISTER_EVENTFD, 5.1).
func NewDeputy(r *Ring, n int) (*Deputy, error) {
	if r == nil || !r.open || r.setupFlags&SetupSQPoll == 0 {
		return nil, fmt.Errorf("uring: NewDeputy needs an open IORING_SETUP_SQPOLL ring: %w", unix.EINVAL)
	}
	if n < 1 {
		return nil, fmt.Errorf("uring: NewDeputy: n = %d, must be >= 1: %w", n, unix.EINVAL)
	}
	var comp *Ring
	var err error
	for _, flags := range companionTrials {
		comp, err = New(WithEntries(r.sqEntries), WithCQEntries(r.cqEntries), WithFlags(flags))
		if err == nil || !errors.Is(err, unix.EINVAL) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("uring: NewDeputy: companion ring: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		comp.Close()
		return nil, fmt.Errorf("uring: NewDeputy: eventfd: %w", err)
	}
	d := &Deputy{ring: r, comp: comp, n: n, efd: efd, staged: make([]SQE, r.sqEntries),
		pinned: make([]bool, r.sqEntries), open: true}
	for _, rr := range []*Ring{r, comp} {
		if err := rr.RegisterEventfd(d.efd, false); err != nil {
			d.Close()
			return nil, fmt.Errorf("uring: NewDeputy: %w", err)
		}
	}
	return d, nil
}

// Ring returns the SQPOLL ring.
func (d *Deputy) Ring() *Ring { return d.ring }

// Companion returns the companion ring (for inspection: its setup flags and
// fd). Submitting or reaping on it directly breaks the Deputy's accounting.
func (d *Deputy) Companion() *Ring { return d.comp }

// N returns the most SQEs one Submit hands to the companion ring.
func (d *Deputy) N() int { return d.n }

// Stats returns the counters since NewDeputy.
func (d *Deputy) Stats() DeputyStats { return d.stats }

// Close unregisters the eventfd from the SQPOLL ring and closes the eventfd
// and the companion ring (whose in-flight requests the kernel cancels; reap
// them first). It does not close the SQPOLL ring. Idempotent; the error wraps
// the errno of io_uring_register(2) (IORING_UNREGISTER_EVENTFD), close(2) or
// munmap(2).
func (d *Deputy) Close() error {
	if !d.open {
		return nil
	}
	d.open = false
	var errs []error
	if d.ring.open {
		if err := d.ring.UnregisterEventfd(); err != nil && !errors.Is(err, unix.ENXIO) {
			errs = append(errs, fmt.Errorf("uring: deputy: %w", err))
		}
	}
	errs = append(errs, d.comp.Close())
	if err := unix.Close(d.efd); err != nil {
		errs = append(errs, fmt.Errorf("uring: deputy: close eventfd: %w", err))
	}
	d.efd = -1
	return errors.Join(errs...)
}

// GetSQE returns a zeroed SQE from the Deputy's staging array, or nil when as
// many SQEs as the SQPOLL ring's SQ holds are staged (call Submit, then
// retry) or the Deputy is closed. The SQE reaches a ring at the next Submit.
// No allocation, no syscall.
func (d *Deputy) GetSQE() *SQE {
	if !d.open || d.nStaged == len(d.staged) {
		return nil
	}
	sqe := &d.staged[d.nStaged]
	d.pinned[d.nStaged] = false
	d.nStaged++
	*sqe = SQE{}
	return sqe
}

// GetCompanionSQE is GetSQE for an SQE that Submit always sends through the
// companion ring, whether the SQ thread sleeps or not, and that never wakes
// the SQ thread. Use it for a request that waits for an event, such as a
// read of an eventfd or a poll: when such a request completes after an
// event, the kernel runs its completion as task work of the task that
// submitted it. On the SQPOLL ring that task is the SQ thread, which the
// completion wakes and keeps awake for its idle time, so that the next
// Submit finds it awake and deputy submission never happens. A link chain
// goes whole to the ring of its first SQE.
func (d *Deputy) GetCompanionSQE() *SQE {
	sqe := d.GetSQE()
	if sqe != nil {
		d.pinned[d.nStaged-1] = true
	}
	return sqe
}

// Staged returns the number of SQEs handed out by GetSQE and not yet
// submitted.
func (d *Deputy) Staged() int { return d.nStaged }

// isLink reports whether sqe links to the next one.
func isLink(sqe *SQE) bool { return sqe.Flags&(SQEIOLink|SQEIOHardlink) != 0 }

// duplicated reports whether staged SQE i is a cancel that goes to both
// rings: ASYNC_CANCEL, or POLL_REMOVE without update flags, outside a chain.
func (d *Deputy) duplicated(i int) bool {
	s := &d.staged[i]
	if isLink(s) || (i > 0 && isLink(&d.staged[i-1])) {
		return false
	}
	return s.Opcode == OpAsyncCancel || (s.Opcode == OpPollRemove && s.Len == 0)
}

// deputySplit returns how many of the staged SQEs go to the companion ring:
// at most n and at most its free SQ slots, never ending inside a link chain
// (0 if the first chain alone is longer).
func (d *Deputy) deputySplit() int {
	k := min(d.n, d.nStaged, int(d.comp.SQSpaceLeft()))
	for k > 0 && isLink(&d.staged[k-1]) {
		k--
	}
	return k
}

// Submit hands the staged SQEs to the kernel and returns how many of them
// were taken (SQEs that found both SQs full stay staged, in order). When the
// SQ thread sleeps, the first N (see NewDeputy) are submitted through the
// companion ring by io_uring_enter(2) in the caller's context, then the rest
// go to the SQPOLL ring and the SQ thread is woken (IORING_ENTER_SQ_WAKEUP).
// Otherwise all go to the SQPOLL ring, which enters the kernel only to wake
// a sleeping thread.
//
// Errors wrap the io_uring_enter errno (unix.EBUSY, unix.EAGAIN, unix.EEXIST
// from a thread that does not own the SINGLE_ISSUER companion ring, ...), or
// unix.EBADF after Close. SQEs already copied to a ring are not lost on error:
// they are in that ring's SQ and the next Submit retries them.
func (d *Deputy) Submit() (int, error) {
	if !d.open {
		return 0, errDeputyClosed
	}
	if d.nStaged == 0 {
		// Nothing staged: still let the rings run deferred work and
		// retry SQEs an earlier error left in their SQs.
		if _, err := d.comp.Submit(); err != nil {
			return 0, err
		}
		_, err := d.ring.Submit()
		return 0, err
	}
	d.stats.Submits++
	asleep := d.ring.SQThreadSleeping()
	k := 0
	if asleep {
		d.stats.Asleep++
		k = d.deputySplit()
	}
	taken, toComp, toRing, split := 0, 0, 0, 0
	for i := 0; i < d.nStaged; {
		// A link chain moves as a whole: its length, and its room.
		j := i + 1
		for j <= d.nStaged-1 && isLink(&d.staged[j-1]) {
			j++
		}
		home, other := d.ring, d.comp
		if i < k || d.pinned[i] {
			home, other = d.comp, d.ring
		}
		if d.duplicated(i) {
			if !d.copyCancel(i, home, other) {
				break
			}
			toComp++
			toRing++
		} else {
			if home.SQSpaceLeft() < uint32(j-i) {
				break
			}
			for x := i; x < j; x++ {
				*home.GetSQE() = d.staged[x]
			}
			switch {
			case d.pinned[i]:
				toComp += j - i
				d.stats.CompanionSQEs += uint64(j - i)
			case home == d.comp:
				toComp += j - i
				split += j - i
				d.stats.DeputySQEs += uint64(j - i)
			default:
				toRing += j - i
				d.stats.SQPollSQEs += uint64(j - i)
			}
		}
		taken = j
		i = j
	}
	// Keep what did not fit, in order.
	copy(d.staged, d.staged[taken:d.nStaged])
	copy(d.pinned, d.pinned[taken:d.nStaged])
	d.nStaged -= taken
	d.inflightComp += toComp
	d.inflightRing += toRing

	// A ring's SQ may also hold SQEs an earlier Submit's error left there: submit
	// them now, or a wait would wait for their CQEs for ever.
	// So may CQEs that found a CQ full (the overflow list), which only an enter with
	// GETEVENTS (Ring.Submit passes it then) moves into the CQ: no wait would see them.
	if toComp > 0 || d.comp.SQReady() > 0 || d.comp.cqNeedsFlush() {
		if _, err := d.comp.Submit(); err != nil {
			return taken, err
		}
	}
	if toRing > 0 || d.ring.SQReady() > 0 || d.ring.cqNeedsFlush() {
		// Ring.Submit adds IORING_ENTER_SQ_WAKEUP when NEED_WAKEUP is
		// (still) set, after publishing the tail.
		if _, err := d.ring.Submit(); err != nil {
			return taken, err
		}
	} else if split > 0 && d.ring.SQThreadSleeping() {
		d.stats.Wakeups++
		if err := d.ring.WakeupSQThread(); err != nil {
			return taken, err
		}
	}
	return taken, nil
}

// copyCancel puts staged cancel i on both rings under one tag. It reports
// false, copying nothing, when either SQ is full.
func (d *Deputy) copyCancel(i int, home, other *Ring) bool {
	if home.SQSpaceLeft() < 1 || other.SQSpaceLeft() < 1 {
		return false
	}
	s := d.staged[i]
	var idx uint32
	if n := len(d.freeCancel); n > 0 {
		idx = d.freeCancel[n-1]
		d.freeCancel = d.freeCancel[:n-1]
	} else {
		idx = uint32(len(d.cancels))
		d.cancels = append(d.cancels, deputyCancel{})
	}
	d.cancels[idx] = deputyCancel{
		userData: s.UserData,
		all:      s.Opcode == OpAsyncCancel && s.OpFlags&AsyncCancelAll != 0,
		halves:   2,
	}
	s.UserData = DeputyTag | uint64(idx)
	*home.GetSQE() = s
	*other.GetSQE() = s
	d.stats.Cancels++
	return true
}

// mergeCancel is the one result of a cancel submitted to both rings: with
// IORING_ASYNC_CANCEL_ALL the sum of the counts the halves found; otherwise
// 0 if either half found its target; if neither did, the first error other
// than -ENOENT (such as -EALREADY: the target is completing), else -ENOENT.
func mergeCancel(c *deputyCancel) int32 {
	var sum int32
	ok := false
	for _, r := range c.res {
		if r >= 0 {
			ok = true
			sum += r
		}
	}
	if ok {
		if c.all {
			return sum
		}
		return 0
	}
	for _, r := range c.res {
		if r != -int32(unix.ENOENT) {
			return r
		}
	}
	return -int32(unix.ENOENT)
}

// PeekCQE returns the oldest unconsumed CQE of the companion ring, else of
// the SQPOLL ring, else nil; a merged cancel CQE is returned once both its
// halves have arrived. Copy what you need, then call CQESeen. No syscall, no
// allocation (except when a duplicated cancel's table grows).
func (d *Deputy) PeekCQE() *CQE {
	if !d.open {
		return nil
	}
	if d.hasMerged {
		return &d.merged
	}
	for {
		r := d.comp
		cqe := r.PeekCQE()
		if cqe == nil {
			r = d.ring
			if cqe = r.PeekCQE(); cqe == nil {
				return nil
			}
		}
		if cqe.UserData&DeputyTagMask != DeputyTag {
			d.from, d.fromFinal = r, cqe.Flags&CQEFMore == 0
			return cqe
		}
		// One half of a duplicated cancel.
		idx := uint32(cqe.UserData)
		res := cqe.Res
		r.CQESeen()
		d.inflightDone(r)
		if int(idx) >= len(d.cancels) || d.cancels[idx].halves == 0 {
			continue // not ours: cannot happen unless the tag was misused
		}
		c := &d.cancels[idx]
		c.halves--
		c.res[c.halves] = res
		if c.halves == 0 {
			d.merged = CQE{UserData: c.userData, Res: mergeCancel(c)}
			d.hasMerged = true
			d.freeCancel = append(d.freeCancel, idx)
			return &d.merged
		}
	}
}

func (d *Deputy) inflightDone(r *Ring) {
	if r == d.comp {
		d.inflightComp--
	} else {
		d.inflightRing--
	}
}

// CQESeen marks the CQE returned by PeekCQE as consumed. Call it only after
// PeekCQE returned non-nil.
func (d *Deputy) CQESeen() {
	if d.hasMerged {
		d.hasMerged = false
		return
	}
	if d.from == nil {
		return
	}
	if d.fromFinal {
		d.inflightDone(d.from)
	}
	d.from.CQESeen()
	d.from = nil
}

// ready is the number of CQEs in both rings' CQs (each half of a duplicated
// cancel counts as one).
func (d *Deputy) ready() uint32 {
	n := d.comp.CQReady() + d.ring.CQReady()
	if d.hasMerged {
		n++
	}
	return n
}

// readyBesides is ready() without the CQEs in r's CQ.
func (d *Deputy) readyBesides(r *Ring) uint32 {
	other := d.comp
	if r == d.comp {
		other = d.ring
	}
	n := other.CQReady()
	if d.hasMerged {
		n++
	}
	return n
}

// SubmitAndWaitTimeout submits like Submit, then waits until at least n CQEs
// are ready in the two rings together (each half of a duplicated cancel
// counts as one, so PeekCQE may still return nil: wait again) or timeout has
// elapsed. timeout < 0 waits without a deadline; 0 only polls. It waits in
// io_uring_enter(2) on the only ring with requests in flight, or, when both
// have some, in ppoll(2) on the eventfd registered with both rings.
//
// Like Ring.SubmitAndWait, the wait also ends without an error, with fewer
// than n CQEs, when a TIMEOUT request (IORING_OP_TIMEOUT) submitted through
// the Deputy completes (fired, or satisfied by its count), on either ring.
// Each ring recognises its TIMEOUT requests' CQEs by user_data, so give a
// TIMEOUT request a user_data of its own. A signal never ends the wait.
//
// It returns the number of staged SQEs submitted. At the deadline the error
// wraps unix.ETIME; other errors wrap the errno of io_uring_enter(2),
// ppoll(2) or read(2), or unix.EBADF after Close.
func (d *Deputy) SubmitAndWaitTimeout(n uint32, timeout time.Duration) (int, error) {
	submitted, err := d.Submit()
	if err != nil {
		return submitted, err
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	for d.ready() < n {
		remaining := time.Duration(-1)
		if timeout >= 0 {
			if remaining = time.Until(deadline); remaining <= 0 {
				return submitted, errDeputyTimeout
			}
		}
		var werr error
		switch {
		// The count asked of the one ring is n less the CQEs of the other (which has
		// nothing in flight, so its count stays): not n less d.ready() plus the ring's
		// own count read again, which a CQE arriving between the two reads would make
		// one too many, a wait for a CQE that never comes.
		case d.inflightComp == 0:
			_, werr = d.ring.SubmitAndWaitTimeout(n-d.readyBesides(d.ring), remaining)
		case d.inflightRing == 0:
			_, werr = d.comp.SubmitAndWaitTimeout(n-d.readyBesides(d.comp), remaining)
		default:
			fromComp, fromRing := d.comp.CQReady(), d.ring.CQReady()
			if err := d.waitEventfd(remaining); err != nil {
				return submitted, err
			}
			if d.comp.timeoutEnded(fromComp) || d.ring.timeoutEnded(fromRing) {
				return submitted, nil
			}
			continue
		}
		if werr == nil {
			// The ring's wait got what it asked for, or the kernel
			// ended it (a TIMEOUT request completed).
			return submitted, nil
		}
		if !errors.Is(werr, unix.ETIME) {
			return submitted, werr
		}
	}
	return submitted, nil
}

// waitEventfd blocks in ppoll(2) until the eventfd is readable or timeout
// (< 0: none) elapses, then drains it. A CQE posted on either ring after
// the last drain leaves the counter non-zero, so no wake-up is lost between
// the caller's check of the CQs and this wait. Task work queued on this
// thread for the companion ring interrupts the wait, runs, and posts its CQE
// (which signals the eventfd).
func (d *Deputy) waitEventfd(timeout time.Duration) error {
	d.pfd[0] = unix.PollFd{Fd: int32(d.efd), Events: unix.POLLIN}
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(timeout.Nanoseconds())
		ts = &t
	}
	if _, err := unix.Ppoll(d.pfd[:], ts, nil); err != nil && err != unix.EINTR {
		return fmt.Errorf("uring: deputy: ppoll eventfd: %w", err)
	}
	var buf [8]byte
	if _, err := unix.Read(d.efd, buf[:]); err != nil && err != unix.EAGAIN && err != unix.EINTR {
		return fmt.Errorf("uring: deputy: read eventfd: %w", err)
	}
	// The companion ring's completions may wait as task work (TASKRUN
	// flag) that only an enter runs.
	if d.comp.cqNeedsFlush() {
		if _, err := d.comp.Submit(); err != nil {
			return err
		}
	}
	return nil
}
