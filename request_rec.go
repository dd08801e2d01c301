//go:build unix

package ringev

// Request records and their pool: a record per request, recycled, with a generation that tells
// its uses apart; the per-fd state; and the checks a request call makes before it takes one.
// A record holds the core's fields only: a backend makes each record inside a struct of its
// own that adds its state (reqDriver.newRec: ringRec on uring, emulRec in the emulation).

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Record states.
const (
	stFree     uint8 = iota
	stQueued         // handed to the driver, not in the kernel yet (uring: not prepped)
	stInflight       // in the kernel (uring) or waiting for readiness (emulation)
	stParked         // a RecvMultishot whose group ran dry, waiting for a released buffer
	stDone           // its last completion is queued; the record is freed after the callback
)

// fsyncData is an Fsync record's flags for fdatasync(2).
const fsyncData = 1

// reqRec is one request's record, recycled through requests.free; gen tells its uses apart.
// It is the first field of the backend's record (reqDriver.newRec), which the backend reaches
// from it without a lookup.
type reqRec struct {
	rq    *requests
	idx   uint32
	gen   uint32
	op    Op
	state uint8
	fd    int32
	buf   []byte
	off   int64 // file offset; -1: the file position
	cb    Callback
	token uint64
	group *BufferGroup

	reqVars // cleared by release in one struct store

	turnSeq  uint64 // dispatch batch in which turnRuns counts
	turnRuns int
	timer    Timer               // the deadline's timer (emulation, multishot, or set after submission)
	sa       unix.RawSockaddrAny // Connect's address
	salen    uint32
	keep     []byte // memory the op addresses, kept reachable until the last completion (SubmitSQE's)
}

// reqVars is the part of a record that one use of it changes after newReq filled it in:
// release clears it with one struct store (a few wide stores, not one per field).
type reqVars struct {
	done      int   // Write, Send: bytes written so far
	deadline  int64 // loop ns; 0: none
	flags     int32 // msg flags, accept4 flags, fsyncData
	res       int32 // a Write's or Send's error after a part was written (see finish), else 0
	counted   bool  // counted in requests.fds[fd].live
	noFd      bool  // SubmitSQE without an fd: not counted
	cancelReq bool  // Cancel (or CloseFd, or the deadline) asked
	timedOut  bool  // the deadline passed
}

// reqFd is the core's state for one fd number.
type reqFd struct {
	live     int32   // records on this fd not yet finished
	okSeq    uint32  // requests.ownSeq when the number was found not to be one of the loop's own fds
	fixed    bool    // the file is in the backend's registered-file table at slot fd (RegisterFile)
	drained  bool    // the last Recv on fd took less than its buffer: the socket was empty then
	closeRec *reqRec // a CloseFd waiting for them
	_        [8]byte // a power-of-two size: indexing rq.fds is a shift, not a multiply
}

// requests is the loop's request state; created by the first request.
type requests struct {
	l        *Loop
	drv      reqDriver
	recs     []*reqRec
	free     []uint32
	live     int // records in use
	fds      []reqFd
	cq       []cqEntry
	head     int
	scratch  []cqEntry // deferRequest's
	comp     Completion
	seen     uint64 // l.dispatch at the last completion batch (completions and fd handlers take turns)
	seenWait uint64 // l.waitSeq at the last completion batch
	turn     uint64
	bgid     uint16
	groups   []*BufferGroup
	okOps    uint32 // bit op: drv.check(op) returned nil
	ownSeq   uint32 // from 1; counts the loop's own fds made since (see reqFd.okSeq, markInternal)
	cbFd     int32  // the fd of the request whose callback is running; -1: none
	dead     bool
	onTmr    func(t *Timer)
}

// reqs returns the loop's request state, creating it.
func (l *Loop) reqs() *requests {
	if l.req != nil {
		return l.req
	}
	return l.newRequests()
}

// newRequests creates the loop's request state.
func (l *Loop) newRequests() *requests {
	rq := &requests{l: l, cbFd: -1, ownSeq: 1}
	rq.onTmr = rq.deadlinePassed
	if d := newRingReqs(l, rq); d != nil {
		rq.drv = d
	} else {
		rq.drv = &emulReqs{l: l, rq: rq}
	}
	l.req = rq
	return rq
}

// checkReq validates what every request call shares: owner, open loop, callback, fd.
func (l *Loop) checkReq(op Op, fd int, cb Callback) error {
	if !l.owned() {
		return ErrNotOwner
	}
	if l.closed {
		return ErrClosed
	}
	if cb == nil {
		return fmt.Errorf("ringev: %v on fd %d: %w", op, fd, ErrNilCallback)
	}
	if fd < 0 || fd > 1<<31-1 {
		return fmt.Errorf("ringev: %v on fd %d: %w", op, fd, unix.EBADF)
	}
	if l.ownsFd(fd) {
		// A read of the wake-up eventfd would eat a Post's wake-up; a close would break the loop.
		return fmt.Errorf("ringev: %v on fd %d: one of the loop's own fds: %w", op, fd, unix.EBADF)
	}
	return nil
}

// opOK is the backend's check of op (drv.check), asked once: a nil answer is kept in okOps
// (the backend's answer does not change).
func (rq *requests) opOK(op Op) error {
	if rq.okOps&(1<<op) == 0 {
		if err := rq.drv.check(op); err != nil {
			return err
		}
		rq.okOps |= 1 << op
	}
	return nil
}

// newReq validates and takes a record for op on fd (needBuf: the op needs a non-empty buf).
// Its first branch is the steady state's (an fd the loop has seen and found not to be one of
// its own since it last made one, an op checked before, a free record): the same checks as
// newReqChecked's, which gives each failure its error. The steady branch also counts the record on its fd,
// which submit does for the others.
func (l *Loop) newReq(op Op, fd int, buf []byte, needBuf bool, cb Callback, token uint64) (*reqRec, error) {
	if rq := l.req; rq != nil && l.owned() && !l.closed && cb != nil &&
		uint(fd) < uint(len(rq.fds)) && rq.okOps&(1<<op) != 0 &&
		(!needBuf || len(buf) > 0 && len(buf) <= maxRideLen) && len(rq.free) > 0 {
		if f := &rq.fds[fd]; f.closeRec == nil && f.okSeq == rq.ownSeq {
			r := rq.pop()
			r.op, r.fd, r.buf, r.cb, r.token, r.off = op, int32(fd), buf, cb, token, -1
			if op != OpClose {
				r.counted = true
				f.live++
			}
			return r, nil
		}
	}
	return l.newReqChecked(op, fd, buf, needBuf, cb, token)
}

// newReqChecked is newReq checking each condition in turn, for the error of the first that fails.
func (l *Loop) newReqChecked(op Op, fd int, buf []byte, needBuf bool, cb Callback, token uint64) (*reqRec, error) {
	if err := l.checkReq(op, fd, cb); err != nil {
		return nil, err
	}
	if needBuf && len(buf) == 0 {
		return nil, fmt.Errorf("ringev: %v on fd %d: %w", op, fd, ErrEmptyBuffer)
	}
	if needBuf && len(buf) > maxRideLen {
		return nil, fmt.Errorf("ringev: %v on fd %d: buffer of %d bytes, at most %d: %w", op, fd, len(buf), maxRideLen, unix.EINVAL)
	}
	rq := l.reqs()
	if err := rq.opOK(op); err != nil {
		return nil, fmt.Errorf("ringev: %v on fd %d: %w", op, fd, err)
	}
	if err := rq.checkFdOpen(fd); err != nil {
		return nil, fmt.Errorf("ringev: %v on fd %d: %w", op, fd, err)
	}
	f := rq.fdState(int32(fd))
	if f.closeRec != nil {
		return nil, fmt.Errorf("ringev: %v on fd %d: %w", op, fd, ErrFdClosing)
	}
	f.okSeq = rq.ownSeq // checkReq found it is not one of the loop's own fds
	if registerEveryFd && !f.fixed && op != OpClose {
		fixed, err := rq.drv.fixFile(int32(fd), true, false)
		if err != nil {
			return nil, fmt.Errorf("ringev: %v on fd %d: registering it (a test's registerEveryFd): %w", op, fd, err)
		}
		f.fixed = fixed
	}
	r := rq.alloc()
	r.op, r.fd, r.buf, r.cb, r.token, r.off = op, int32(fd), buf, cb, token, -1
	return r, nil
}

// checkFdOpen returns an error wrapping unix.EBADF when fd is beyond the per-fd table and names
// no open file, so that a wrong fd number (2147483647) fails instead of growing the table to it.
// The fcntl(2) is made only when the table would have to grow, never on the steady path.
func (rq *requests) checkFdOpen(fd int) error {
	if fd < len(rq.fds) {
		return nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return fmt.Errorf("not an open file: %w", err)
	}
	return nil
}

// fdState returns the state of fd, growing the table.
func (rq *requests) fdState(fd int32) *reqFd {
	if int(fd) >= len(rq.fds) {
		n := 2*len(rq.fds) + int(fd) + 16
		fds := make([]reqFd, n)
		copy(fds, rq.fds)
		rq.fds = fds
	}
	return &rq.fds[fd]
}

// alloc takes a free record (or makes one).
func (rq *requests) alloc() *reqRec {
	if len(rq.free) == 0 {
		return rq.grow()
	}
	return rq.pop()
}

// pop takes a free record; one must be free.
func (rq *requests) pop() *reqRec {
	n := len(rq.free) - 1
	r := rq.recs[rq.free[n]]
	rq.free = rq.free[:n]
	rq.live++
	return r
}

// grow is alloc when no record is free: it makes one (reqDriver.newRec) and adds it to the pool.
func (rq *requests) grow() *reqRec {
	r := rq.drv.newRec()
	r.rq, r.idx, r.timer = rq, uint32(len(rq.recs)), Timer{loop: rq.l, index: -1}
	r.timer.handler = rq.onTmr
	r.timer.Data = r
	rq.recs = append(rq.recs, r)
	rq.live++
	return r
}

// release frees a record whose last callback ran: a handle to it is stale from now on.
func (rq *requests) release(r *reqRec) {
	r.gen = (r.gen + 1) & genMask
	r.state = stFree
	r.buf, r.cb = nil, nil
	if r.op >= OpRecvMultishot { // the only ops that set them
		r.group, r.keep = nil, nil
	}
	r.reqVars = reqVars{}
	rq.free = append(rq.free, r.idx)
	rq.live--
}

// genMask bounds the generation to what user_data carries (uring: 29 bits).
const genMask = 1<<29 - 1

// submit hands a new record to the driver and returns its handle (small enough to be inlined:
// newReq's steady branch has counted the record already).
func (rq *requests) submit(r *reqRec) Request {
	if !r.counted {
		rq.count(r)
	}
	r.state = stQueued
	rq.drv.start(r)
	return Request{rec: r, gen: r.gen}
}

// count counts r on its fd (requests.fds[fd].live) unless it is a CloseFd or has no fd.
func (rq *requests) count(r *reqRec) {
	if r.op != OpClose && !r.noFd {
		r.counted = true
		rq.fds[r.fd].live++
	}
}
