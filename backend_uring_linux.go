package ringev

import (
	"fmt"
	"time"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// uringBackend is the "uring" backend, the one "auto" prefers: close-safe io_uring. The fds
// live in a level-triggered epoll set (so close(2) releases a file at once, whoever closes it,
// and a second idle loop pins nothing). A loop that found fds ready at its last wait looks at
// the set again with a non-blocking epoll_wait(2); a loop with nothing ready blocks in the ring,
// with IORING_OP_EPOLL_WAIT (Linux 6.15) on the set, on a ring set up with
// SINGLE_ISSUER|DEFER_TASKRUN when the kernel has them, and a deadline through the ring's
// EXT_ARG timeout, waited for once. One EPOLL_WAIT is in flight at most; its events buffer
// belongs to the backend and stays reachable until its completion, cancellation included.
//
// On kernels without IORING_OP_EPOLL_WAIT (the first completion fails with -EINVAL) it blocks
// with a one-shot IORING_OP_POLL_ADD on the epoll fd instead and then reads the set with
// epoll_wait(2), which is close-safe too, for one more syscall per blocking wait.
//
// docs/design.md records the designs measured before this one was chosen.
type uringBackend struct {
	epollBackend                   // setInterest: epoll_ctl on the set
	rideState                      // inflight, worked, fallback; the core's ride decision (ride.go)
	ring         *uring.Ring       //
	ringEvents   []unix.EpollEvent // written by the kernel while inflight
	ioTag        uint64            // user_data of the last ride's I/O SQE (ride); > uringEpollTag
	ioBuf        []byte            // the buffer of the last ride's I/O SQE (on the heap, alive)
	pinned       [][]byte          // buffers of I/O SQEs whose wait failed: the kernel may still write them
	epollSQE     uring.SQE         // the EPOLL_WAIT SQE on the set into ringEvents, tagged uringEpollTag
	reqs         ringUser          // the requests' driver, once a request was made
	epoch        uint64            // counts the enters that may submit the SQ (submitted)
	subTail      uint32            // the SQ's tail (uring.Ring.SQTail) at the last of them
	// lookSkip: waits left before a wait with requests in the kernel looks first without
	// blocking again (look); lookMiss: the skip after the last look that found nothing.
	lookSkip, lookMiss int
	blocking           uint64 // waiting enters made by wait (tests read it)
	// batchN, batchWait: WithBatchWait (0: off); a blocking wait with requests in the kernel
	// waits up to batchWait for batchN completions (min_wait).
	batchN    uint32
	batchWait time.Duration
	// batchSkip: blocking waits left that wait without the batch after a batching wait that
	// found fewer than batchFew completions (a load too light to batch); batchMiss: the skip
	// after the last such miss (1, 3, 7, ... maxBatchSkip); batched: batching waits made.
	batchSkip, batchMiss int
	batched              uint64
	// hides: probeHides when the loop was made (a test's kernel without some opcodes), for
	// the life of the loop; nil in a program.
	hides func(code uint8) bool
	// woke: a reap found a wake-up CQE of another loop's PostTo (uringWakeTag); msg: this
	// loop's side of PostTo (crossloop_uring_linux.go).
	woke bool
	msg  msgState
	// beforeBlock is the loop's yieldBeforeBlock, run just before an enter that may block
	// (yieldLate): a wait that the enter without waiting serves (look) does not read the clock.
	beforeBlock func()
}

// yieldLate is lateYielder's: wait runs yield just before an io_uring_enter(2) that may
// block, and not before the enter that does not wait (look).
func (b *uringBackend) yieldLate(yield func()) { b.beforeBlock = yield }

// uringCQEntries is the CQ size of the backend's ring (openUring); maxBatchWait, the largest
// count WithBatchWait takes, is that: the kernel caps min_complete there.
const (
	uringCQEntries = 1024
	maxBatchWait   = uringCQEntries
)

// setBatchWait turns on WithBatchWait's batching wait on be if it is the uring backend (the
// others have none): an error wrapping unix.EOPNOTSUPP that names IORING_FEAT_MIN_TIMEOUT
// (Linux 6.12) when the kernel lacks it.
func setBatchWait(be backend, n int, d time.Duration) error {
	b, ok := be.(*uringBackend)
	if !ok {
		return nil
	}
	if err := minTimeoutFeature(b.ring); err != nil {
		return err
	}
	b.batchN, b.batchWait = uint32(n), d
	return nil
}

// featureHides, set only by tests (export_test.go), masks IORING_FEAT_* bits off what the
// kernel reports to WithBatchWait and CheckBatchWait: a kernel without those features.
var featureHides uint32

// minTimeoutFeature returns nil if r's kernel has IORING_FEAT_MIN_TIMEOUT (Linux 6.12), else
// the error WithBatchWait and CheckBatchWait give: it names the feature and wraps
// unix.EOPNOTSUPP.
func minTimeoutFeature(r *uring.Ring) error {
	if r.Features()&^featureHides&uring.FeatMinTimeout == 0 {
		return fmt.Errorf("ringev: WithBatchWait needs IORING_FEAT_MIN_TIMEOUT (Linux 6.12), which this kernel lacks: %w", unix.EOPNOTSUPP)
	}
	return nil
}

// CheckBatchWait tells, without making a loop, whether a loop on the uring backend can have
// WithBatchWait's batching wait here: nil if it can; otherwise an error like the one
// New(WithBackend("uring"), WithBatchWait(n, d)) would return: one wrapping unix.EOPNOTSUPP
// that names IORING_FEAT_MIN_TIMEOUT (Linux 6.12) when the kernel lacks it, or io_uring_setup's
// own error when io_uring cannot be used at all (wrapping unix.ENOSYS, or unix.EPERM when the
// kernel.io_uring_disabled sysctl forbids it; see uring.New), which names this check's ring of
// 2 entries where New's names its own. It sets up and closes a ring of 2 SQ entries (one
// io_uring_setup(2) and close(2), a few µs). Its answer depends on the kernel and the sysctl
// alone, except when the ring cannot be set up for want of an fd or memory (io_uring_setup's
// EMFILE, ENFILE or ENOMEM, wrapped), which may pass. A program that wants the batching wait
// only where the kernel has it (as `ringev serve` does by default) asks this first.
func CheckBatchWait() error {
	r, err := uring.New(uring.WithEntries(2))
	if err != nil {
		return err // the binding's error starts with "uring:" and names the call
	}
	defer r.Close()
	return minTimeoutFeature(r)
}

// uringEpollTag is the user_data of the EPOLL_WAIT (or fallback POLL_ADD) SQE; the I/O SQEs
// of the rides (Loop.ReadNonblocking and WriteNonblocking) count up from it (uringBackend.ioTag).
const uringEpollTag = 1

// reqTag is bit 63 of a user_data: the SQE is a request's, and its CQE goes to the requests'
// driver (ringUser); the backend's own tags (uringEpollTag, the rides', uringWakeTag) stay
// below it.
const reqTag uint64 = 1 << 63

// probeHides, set only by tests (export_test.go, before they make a loop), makes the probes of
// the kernel's opcodes (the requests' check, PostTo's MSG_RING) take the opcodes it reports as
// missing: a kernel without a feature, on any kernel. A uring loop takes it when it is made
// (uringBackend.hides) and keeps it for its life.
var probeHides func(code uint8) bool

// ringUser is the requests' driver as the backend sees it (ringReqs, backend_uring_req_linux.go):
// the other user of the ring, whose SQEs go to the kernel with the backend's enters and whose
// CQEs (user_data with reqTag) come back among the backend's. The backend calls it, and no other
// code of the requests layer; the driver sets uringBackend.reqs when the loop's first request is
// made.
type ringUser interface {
	// needWait reports whether the wait must enter the ring: SQEs to prepare or submit, or
	// CQEs to come.
	needWait() bool
	// flush prepares in the SQ the SQEs that wait to be, before an enter.
	flush() error
	// inKernel reports whether some of the driver's SQEs are in the kernel without their last
	// CQE: a batching wait has completions to wait for.
	inKernel() bool
	// owed reports whether the core must come back before a blocking wait: completions wait for
	// their callbacks, or requests for their SQEs.
	owed() bool
	// cqes reads the CQEs that came since the last read (reap): the requests' go to the driver;
	// got and res are the EPOLL_WAIT's CQE's, if it came. It moves the CQ's head.
	cqes(ring *uring.Ring) (got bool, res int32)
	// readCQE reads the request's CQE c at position p, as cqes reads each (the ride's loop).
	readCQE(c *uring.CQE, p uint32)
	// unread is the position of the first CQE not read yet.
	unread() uint32
	// read marks the CQEs before position tail read, and moves the CQ's head when the driver
	// holds none of them.
	read(ring *uring.Ring, tail uint32)
}

// uringForceFallback makes new uring backends use the pre-6.15 fallback (POLL_ADD on the epoll
// fd, then epoll_wait) even where IORING_OP_EPOLL_WAIT exists; tests and benchmarks set it.
var uringForceFallback bool

func openUring() (backend, error) {
	// An SQ of 256 entries and a CQ of 1024: requests can make and post many entries per wait
	// (an overflow loses nothing, IORING_FEAT_NODROP, but costs a flush; a full SQ costs an
	// enter: bench pipes --mode completion, fd_busy256, made 0.031 io_uring_enter per event
	// with 64 SQEs and 0.0078 with 256, strace -c).
	r, err := uring.New(uring.WithEntries(256), uring.WithCQEntries(uringCQEntries))
	if err != nil {
		return nil, err // the binding's error already starts with "uring:" and names the call
	}
	// The loop's thread is locked for the ring's life, so its enters can use a registered
	// ring fd (IORING_REGISTER_RING_FDS, 5.18), sparing the kernel an fd lookup per enter. A
	// kernel without it keeps the plain fd.
	_ = r.RegisterRingFd()
	if err := tryEnter(r); err != nil {
		r.Close()
		return nil, fmt.Errorf("uring: %w", err)
	}
	ep, err := openEpoll()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("uring: %w", err)
	}
	b := &uringBackend{epollBackend: *ep.(*epollBackend), ring: r, ringEvents: make([]unix.EpollEvent, 64),
		rideState: rideState{fallback: uringForceFallback}, ioTag: uringEpollTag, hides: probeHides}
	// A kernel without IORING_OP_EPOLL_WAIT (before 6.15) is known here when it has the
	// opcode probe (5.6), so that IOPath says so from New on; else the first wait's EINVAL
	// tells it (reap).
	if p, err := r.Probe(); err == nil && (!p.OpSupported(uring.OpEpollWait) || probeHides != nil && probeHides(uring.OpEpollWait)) {
		b.fallback = true
	}
	b.epollSQE.PrepEpollWait(b.epfd, b.ringEvents, 0)
	b.epollSQE.SetUserData(uringEpollTag)
	return b, nil
}

func (b *uringBackend) wait(timeout int64, buf []readyFd) ([]readyFd, error) {
	b.woke = false
	reqs := b.reqs != nil && b.reqs.needWait() // (flush leaves it as it is: what it prepares is in flight)
	if reqs {
		// Requests queued or in the kernel: their SQEs go with this enter, and their CQEs
		// come back only through the ring (with DEFER_TASKRUN, only when we enter it).
		if err := b.reqs.flush(); err != nil {
			return buf, err
		}
		if timeout == 0 {
			if _, err := b.entering().Submit(); err != nil {
				return buf, ringWaitError(err)
			}
			n := len(buf)
			var retry bool
			var err error
			if buf, retry, err = b.reap(buf); err != nil || retry || len(buf) > n {
				return buf, err
			}
		}
	}
	// A look without blocking (the core's busy loop, docs/design.md) reads the epoll set
	// directly: a raw epoll_wait(2) costs less than a trip through the ring. Only a wait that
	// may block goes through the ring.
	if timeout == 0 {
		return b.epollBackend.wait(0, buf)
	}
	if !b.inflight {
		s, err := ringSQE(b.entering())
		if err != nil {
			return buf, err
		}
		if b.fallback {
			s.PrepPollAdd(b.epfd, unix.POLLIN)
		} else {
			s.PrepEpollWait(b.epfd, b.ringEvents, 0)
		}
		s.SetUserData(uringEpollTag)
		b.inflight = true
	}
	if reqs {
		if b.lookSkip == 0 {
			// A busy loop's requests usually complete within the enter that submits them
			// (a write at once, a read that write fed by the ring's deferred task work), so
			// that a waiting enter would not sleep. It would still go through the runtime's
			// syscall bookkeeping, whose P the runtime's monitor takes away from a syscall
			// it sees last across its tick (a loaded machine, GOMAXPROCS 1), waking another
			// thread each time: measured, 12-23k context switches per 500k events. So first
			// an enter that does not wait (min_complete 0, GETEVENTS: the deferred task work
			// runs), through rawsys like the busy epoll look, and a wait only if it found
			// nothing (docs/design.md, "The blocking enter").
			var found, retry bool
			var err error
			if buf, found, retry, err = b.look(buf); err != nil || found || retry {
				return buf, err // retry: as after the blocking enter, below
			}
			// Nothing yet: skip the look for the next 1, 3, 7, ... 63, then 64 waits, so a
			// loop whose requests wait in the kernel (a server's recvs) pays at most 1/64 of
			// an enter per wait for it.
			b.lookMissed(0)
		} else {
			b.lookSkip--
		}
	}
	if b.beforeBlock != nil {
		b.beforeBlock()
	}
	b.blocking++
	var err error
	if b.batchWait > 0 && b.reqs != nil && b.reqs.inKernel() && b.batchSkip == 0 {
		// WithBatchWait: wait for batchN completions, for at most batchWait past which the
		// first one ends the wait; never past the next timer (timeout).
		mw := b.batchWait
		if timeout >= 0 {
			mw = min(mw, time.Duration(timeout))
		}
		b.batched++
		_, err = b.entering().SubmitAndWaitMin(b.batchN, time.Duration(timeout), mw)
		// A batch that gathered one or two completions was mostly waiting for completions
		// that were not coming (a lone client's request waits the whole min_wait): wait
		// without it for the next 1, 3, 7, ... maxBatchSkip blocking waits, then try again.
		// A load that batches (50 clients at -P 1: ~8 a wait) keeps it.
		// A wait that the next timer ended with nothing ready (ETIME) delayed nothing and
		// says nothing about the load: it leaves the back-off as it was (a reset there would
		// undo it for a lone client on a loop with a timer firing between its requests). A
		// batch of 2 backs off when it gathers 1; a batch of 1 never waits past a completion.
		if err == nil {
			if b.batchN > 1 && b.ring.CQReady() < min(batchFew, b.batchN) {
				b.batchMiss = min(2*b.batchMiss+1, maxBatchSkip)
				b.batchSkip = b.batchMiss
			} else {
				b.batchMiss = 0
			}
		}
	} else {
		if b.batchSkip > 0 && b.reqs != nil && b.reqs.inKernel() {
			b.batchSkip--
		}
		_, err = b.entering().SubmitAndWaitTimeout(1, time.Duration(timeout))
	}
	if err := ringWaitError(err); err != nil {
		return buf, err
	}
	// retry: the EPOLL_WAIT found the kernel without it, and the fallback is on now. The wait
	// returns to the core, whose next wait arms the fallback: waiting again here would drop a
	// wake-up from another loop's PostTo that the same reap took (wait clears woke), and
	// sleep through it.
	buf, _, err = b.reap(buf)
	return buf, err
}

// batchFew: a batching wait that gathers fewer completions than this backs off (batchSkip).
const batchFew = 3

// maxBatchSkip is the most blocking waits a loop with WithBatchWait makes without the batch
// after batching waits that gathered fewer than batchFew completions.
const maxBatchSkip = 64

// maxLookSkip is the most waits a loop with requests in the kernel skips the enter that does
// not wait (uringBackend.look) after looks that found nothing.
const maxLookSkip = 64

// look submits what is queued and collects what completed with an io_uring_enter(2) that does
// not wait (Ring.Submit: min_complete 0, with GETEVENTS on a DEFER_TASKRUN ring, through
// rawsys), and reads the CQEs (reap). found: a request completed, or the fds' look did. A look
// that finds something makes the next wait look first again.
// retry: as reap's.
func (b *uringBackend) look(buf []readyFd) (_ []readyFd, found, retry bool, _ error) {
	if _, err := b.entering().Submit(); err != nil {
		return buf, false, false, ringWaitError(err)
	}
	n := len(buf)
	buf, retry, err := b.reap(buf)
	if err != nil || retry {
		return buf, false, retry, err
	}
	// Besides what completed, the look may have left the blocking enter nothing to wait for:
	// a request the driver queued again while reaping (the rest of a short send) is not in
	// the SQ yet, and an EPOLL_WAIT that completed (with nothing, or ECANCELED) is not in
	// flight. Either goes back to the core, whose next wait flushes and re-arms.
	// A wake-up from another loop's PostTo ends the wait: it comes once, not level-triggered.
	if found = len(buf) > n || b.woke || b.reqs.owed() || !b.inflight; found {
		b.lookMiss = 0
	}
	return buf, found, false, nil
}

// lookMissed counts a look (the wait's, or the request turn's enter) that found nothing:
// the next 1, 3, 7, ... 63, then 64 waits skip theirs (lookMiss doubles plus one, to
// maxLookSkip), and extra more (the turn's look is made before a wait that takes one from
// the skip).
func (b *uringBackend) lookMissed(extra int) {
	b.lookMiss = min(2*b.lookMiss+1, maxLookSkip)
	b.lookSkip = b.lookMiss + extra
}

// reap reads the ring's CQEs in place: a request's go to the requests' driver, the
// EPOLL_WAIT's events are appended to buf (with the fallback, the set is read). retry: the
// kernel lacks IORING_OP_EPOLL_WAIT (the fallback is on now): the wait returns to the core,
// whose next wait arms the fallback.
func (b *uringBackend) reap(buf []readyFd) ([]readyFd, bool, error) {
	r := b.ring
	got := false
	var res int32
	if b.reqs != nil {
		got, res = b.reqs.cqes(r) // it moves the CQ's head (it may hold requests' CQEs there)
	} else {
		n := r.CQReady()
		for i := uint32(0); i < n; i++ {
			switch c := r.CQEAt(i); c.UserData {
			case uringEpollTag:
				got, res = true, c.Res
			case uringWakeTag:
				b.woke = true
				b.msg.got++
			}
		}
		r.CQAdvance(n)
	}
	if !got {
		return buf, false, nil
	}
	b.inflight = false
	switch {
	case res >= 0 && b.fallback:
		buf, err := b.epollBackend.wait(0, buf)
		return buf, false, err
	case res >= 0:
		b.worked = true
		buf = append(buf, b.ringEvents[:res]...)
	case res == -int32(unix.EINTR) || res == -int32(unix.ECANCELED):
	case res == -int32(unix.EINVAL) && !b.worked && !b.fallback:
		b.fallback = true // IORING_OP_EPOLL_WAIT is missing (before Linux 6.15)
		return buf, true, nil
	default:
		return buf, false, fmt.Errorf("ringev: uring backend: IORING_OP_EPOLL_WAIT: %w", unix.Errno(-res))
	}
	return buf, false, nil
}

// replaceSet replaces the epoll set (epollBackend.replaceSet) and cancels the EPOLL_WAIT (or
// fallback POLL_ADD) in flight, which is on the old set: it would not see the fds added from
// now on. Its CQE (-ECANCELED, or what the old set reported meanwhile, whose generations the
// core checks) is collected by the next wait as usual; the cancel's own CQE (user_data 0) is
// ignored.
func (b *uringBackend) replaceSet() error {
	if err := b.epollBackend.replaceSet(); err != nil {
		return err
	}
	if !b.inflight {
		return nil
	}
	s, err := ringSQE(b.entering())
	if err != nil {
		return err
	}
	s.PrepCancel(uringEpollTag, 0) // IORING_OP_ASYNC_CANCEL (5.5) by user_data
	s.SetUserData(0)
	if _, err := b.entering().Submit(); err != nil {
		return fmt.Errorf("ringev: uring backend: cancelling the wait on the old epoll set: %w", err)
	}
	return nil
}

// entering returns b's ring for an io_uring_enter(2) that may submit its SQ (every enter
// of the backend goes through it): the requests the driver prepared in the SQ are the
// kernel's from then on (submitted).
func (b *uringBackend) entering() *uring.Ring {
	b.submitted()
	return b.ring
}

// submitted is called before every io_uring_enter(2) on the ring that may submit its SQ (the
// wait, the ride, a set's replacement, the requests' shutdown and turn): what was prepared in
// the SQ is the kernel's from then on (the requests' driver tells a request's SQE that is not
// yet by epoch and subTail). Calling it early is safe: a cancel then goes to the kernel as an
// IORING_OP_ASYNC_CANCEL behind the request, which the kernel takes in order.
func (b *uringBackend) submitted() { b.epoch, b.subTail = b.epoch+1, b.ring.SQTail() }

func (b *uringBackend) close() error {
	if b.ring == nil {
		return nil
	}
	err := b.ring.Close() // cancels the EPOLL_WAIT in flight before its buffer can go
	b.ring = nil
	if cerr := b.epollBackend.close(); err == nil {
		err = cerr
	}
	return err
}
