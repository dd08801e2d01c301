package ringev

// Requests: completion I/O beside fd events (DESIGN.md, "Requests"). A request is one
// operation (read, write, recv, send, accept, connect, close, fsync, a multishot recv into a
// buffer group, or any SQE prepared with package uring) and one callback, which the loop runs
// exactly once with the result: the byte count (or new fd), an error wrapping the errno, or
// ECANCELED when a cancel won. A multishot request's callback runs once per completion, every
// one but the last with Completion.More set.
//
// This file is the core's half: the API, the record pool, the completion queue and its place
// in the dispatch order, deadlines, close sequencing and buffer groups. A backend runs
// requests through a reqDriver: the uring backend as SQEs on its ring
// (backend_uring_req_linux.go), the others with readiness and non-blocking syscalls
// (request_emul.go).

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// Op names a request's operation.
type Op uint8

// The operations a request can carry.
const (
	OpRead            Op = iota + 1 // Loop.Read: read(2) or pread(2)
	OpWrite                         // Loop.Write: write(2) or pwrite(2), finished by the loop
	OpRecv                          // Loop.Recv: recv(2)
	OpSend                          // Loop.Send: send(2), finished by the loop
	OpAccept                        // Loop.Accept: accept4(2)
	OpAcceptMultishot               // Loop.AcceptMultishot: one completion per connection
	OpConnect                       // Loop.Connect: connect(2)
	OpClose                         // Loop.CloseFd: cancel the fd's requests, then close(2)
	OpFsync                         // Loop.Fsync: fsync(2) or fdatasync(2)
	OpRecvMultishot                 // Loop.RecvMultishot: one completion per receive, into a BufferGroup
	OpSQE                           // Loop.SubmitSQE: an SQE prepared with package uring
)

var opNames = [...]string{"", "read", "write", "recv", "send", "accept", "accept-multishot", "connect", "close", "fsync", "recv-multishot", "sqe"}

// String returns the operation's name ("read", "recv-multishot", ...).
func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Callback is a request's completion callback. The loop runs it on its goroutine, as a
// handler (Once from inside it returns ErrNested). c and what it points to belong to the loop
// and are valid only until the callback returns; copy what you need. Make one Callback per
// connection (a method value, or a function that reads Completion.Token) and reuse it for every
// request: a closure made for each request is a heap allocation per request.
type Callback func(c *Completion)

// Completion is what a Callback gets: the request's outcome.
type Completion struct {
	// Request is the request's handle (Cancel on it is a no-op once the last completion ran).
	Request Request
	// Op is the request's operation, Fd its fd, Token the token it was made with.
	Op    Op
	Fd    int
	Token uint64
	// N is the result when Err is nil: bytes read or received (0 at end of file), bytes written
	// or sent (all of the buffer: the loop finishes short writes and sends), the new fd for
	// Accept, 0 for Connect, Close and Fsync, the CQE's Res for SubmitSQE. With an error from
	// Write or Send, N counts the bytes written before it.
	N int
	// Err is nil or an error that wraps the errno (errors.Is(err, unix.ECONNRESET) works):
	// unix.ECANCELED when a cancel (Request.Cancel, CloseFd) won, unix.ETIME when the
	// request's deadline passed (Request.SetTimeout), unix.ENOBUFS when a RecvMultishot's
	// buffer group ran dry (the request stays: the loop re-arms it when a buffer is released).
	Err error
	// Buf is the request's buffer: for Read and Recv the bytes that arrived (buf[:N]), for
	// Write and Send the whole buffer, for RecvMultishot a view of the group buffer that holds
	// this completion's bytes (give it back with ReleaseBuffer), else nil.
	Buf []byte
	// More is set on every completion of a multishot request but its last.
	More bool
	// SockNonempty is set on a Recv or RecvMultishot completion when the socket still held
	// data after it (IORING_CQE_F_SOCK_NONEMPTY, Linux 5.19; io_uring_prep_recv(3)): as a
	// rule a RecvMultishot's next completion is coming at once, for instance the rest of a
	// message that filled its group buffer, but it is a hint, not a promise (TCP counts an
	// urgent byte, MSG_OOB, as queued data that no recv returns). Only the uring backend sets
	// it; elsewhere it is false.
	SockNonempty bool

	group *BufferGroup
	bid   int32 // buffer ID in group, or -1
}

// BufferID returns the ID of the buffer-group buffer this completion holds, or -1.
func (c *Completion) BufferID() int { return int(c.bid) }

// ReleaseBuffer gives the buffer-group buffer this completion holds back to its group (the
// same as c's BufferGroup.Release(c.BufferID())); Buf must not be used after it. It does
// nothing for a completion without one.
func (c *Completion) ReleaseBuffer() {
	if c.group != nil && c.bid >= 0 {
		c.group.Release(int(c.bid))
		c.bid = -1
	}
}

// Request is the handle of a request. The zero Request is no request. A handle stays valid
// after the request's last completion ran, but then names nothing: Cancel and SetTimeout on it
// do nothing (the loop recycles its records; a generation tells a stale handle apart).
//
// The request calls (Loop.Read, Write, Recv, Send, Accept, AcceptMultishot, Connect, Fsync,
// CloseFd, RecvMultishot, SubmitSQE) each return the request's handle, or an error, and
// then submit nothing:
// ErrNotOwner from a goroutine other than the loop's, ErrClosed after Close, one wrapping
// ErrNilCallback for a nil cb, unix.EBADF for a negative fd or one of the loop's own fds (its
// epoll set, io_uring instance, eventfds), ErrEmptyBuffer for an empty
// buffer where the op needs one, ErrFdClosing while a CloseFd closes the fd, and on the uring
// backend one wrapping unix.EOPNOTSUPP that names the kernel feature the op needs when this
// kernel lacks it (probed once with IORING_REGISTER_PROBE: AcceptMultishot and CloseFd need
// Linux 5.19, RecvMultishot 6.0, Read, Write, Recv and Send 5.6). token is handed back in
// Completion.Token.
//
// Buffer ownership: a request's buffer belongs to the kernel from the call until the
// request's last callback (cancelled and timed-out requests included: the buffer is the
// kernel's until its completion arrives). The loop keeps it reachable for the garbage
// collector meanwhile; the caller must neither read nor write it, nor hand it to another
// request, until then. On the uring backend every request made while a Once runs goes to the
// kernel in the loop's next io_uring_enter(2): its wait's, or that of a handler's I/O that
// rides the ring (ReadNonblocking, WriteNonblocking) made after it. Its SQE is prepared in
// the SQ when it is made (when requests wait in a queue ahead of it, the SQ is full or it has
// a deadline: at the wait).
//
// On the epoll and poll backends the same calls are emulated with readiness and non-blocking
// syscalls (the fd must be O_NONBLOCK, as for fd events; regular files are read, written and
// synced at once, blocking), through an fd event the loop keeps on the fd while requests wait.
//
// A request's fd must be closed through the loop (CloseFd) while it has requests: a plain
// close(2) with a request in flight does not release the file on the uring backend (the
// kernel holds a reference, as for a pending IORING_OP_POLL_ADD: a socket's peer sees no EOF
// until the request completes or is cancelled), and on the other backends leaves the request
// waiting, for the file that takes the number next. Once an fd has no request left, a plain
// close(2) is fine, with one exception on the emulation: not inside a callback of that fd's own
// request when a request on the same number (now another file's) follows in that callback. The
// emulation keeps an idle fd's epoll registration, to spare an epoll_ctl per request, and renews
// it (one EPOLL_CTL_MOD) when a request comes from anywhere but that fd's own callback.
type Request struct {
	rec *reqRec
	gen uint32
}

// Errors of the request calls. Each call returns them (wrapped, with the fd or op named) and
// submits nothing.
var (
	// ErrNilCallback: a request was made with a nil Callback.
	ErrNilCallback = errors.New("ringev: request with a nil callback")
	// ErrEmptyBuffer: Read, Write, Recv or Send with an empty buffer (wraps unix.EINVAL).
	ErrEmptyBuffer = fmt.Errorf("ringev: request needs a non-empty buffer: %w", unix.EINVAL)
	// ErrNeedsUring: SubmitSQE on a backend other than "uring" (wraps unix.EOPNOTSUPP).
	ErrNeedsUring = fmt.Errorf("ringev: SubmitSQE needs the uring backend: %w", unix.EOPNOTSUPP)
	// ErrFdClosing: a request for an fd that a CloseFd is closing (wraps unix.EBADF).
	ErrFdClosing = fmt.Errorf("ringev: fd is being closed by CloseFd: %w", unix.EBADF)
)

// reqError is the error of a failed request: it wraps the errno, and being one byte it
// converts to an error without allocating.
type reqError uint8

func (e reqError) Error() string { return "ringev: request: " + unix.Errno(e).Error() }
func (e reqError) Unwrap() error { return unix.Errno(e) }

// errnoErr is the error for a negative CQE result (res = -errno).
func errnoErr(res int32) error {
	if -res < 256 {
		return reqError(-res)
	}
	return unix.Errno(-res)
}

// Record states.
const (
	stFree     uint8 = iota
	stQueued         // handed to the driver, not in the kernel yet (uring: not prepped)
	stInflight       // in the kernel (uring) or waiting for readiness (emulation)
	stParked         // a RecvMultishot whose group ran dry, waiting for a released buffer
	stDone           // its last completion is queued; the record is freed after the callback
)

// reqRec is one request's record, recycled through requests.free; gen tells its uses apart.
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

	timer Timer // the deadline's timer (emulation, multishot, or set after submission)
	ts    uring.Timespec
	sa    unix.RawSockaddrAny // Connect's address
	salen uint32
	sqe   uring.SQE // SubmitSQE's SQE
	keep  []byte    // SubmitSQE's memory kept alive

	qnext, qprev *reqRec // emulation: the fd's queue
	qlist        *reqList
	turnSeq      uint64 // dispatch batch in which turnRuns counts
	turnRuns     int
}

// reqVars is the part of a record that one use of it changes after newReq filled it in:
// release clears it with one struct store (a few wide stores, not one per field).
type reqVars struct {
	done      int   // Write, Send: bytes written so far
	deadline  int64 // loop ns; 0: none
	flags     int32 // msg flags, accept4 flags, fsync flags
	res       int32
	cflags    uint32
	cqes      int8 // uring: final CQEs still to come (op, link timeout)
	counted   bool // counted in requests.fds[fd].live
	noFd      bool // SubmitSQE without an fd: not counted
	cancelReq bool // Cancel (or CloseFd, or the deadline) asked
	timedOut  bool // the deadline passed
	opDone    bool // uring: the op's final CQE arrived
	link      bool // uring: the request's LINK_TIMEOUT is in the kernel (its CQE has not come)

	// uring: the SQEs in which ringReqs.start prepared the request and its LINK_TIMEOUT (in
	// the ring's mapped memory, not the Go heap), and the driver's epoch then (see
	// ringReqs.unsubmitted).
	sqeAt, ltAt *uring.SQE
	epoch       uint64
}

// reqFd is the core's state for one fd number.
type reqFd struct {
	live     int32   // records on this fd not yet finished
	okSeq    uint32  // requests.ownSeq when the number was found not to be one of the loop's own fds
	fixed    bool    // uring: the file is in the ring's registered-file table at slot fd (RegisterFile)
	drained  bool    // the last Recv on fd took less than its buffer: the socket was empty then
	closeRec *reqRec // a CloseFd waiting for them
	emul     *emulFd // the emulation's state (nil on uring)
}

// cqEntry is one completion waiting for its callback.
type cqEntry struct {
	rec   *reqRec
	gen   uint32
	res   int32
	flags uint32 // uring.CQEFMore, uring.CQEFBuffer | bid << CQEBufferShift
	off   int32  // a group buffer's data offset in its buffer (incremental consumption)
}

// reqDriver is what a backend does for requests, and all it does: the core says "queue this
// request", "cancel it", "cancel every request on this fd"; the driver tells the core what
// completed (requests.complete for a multishot's intermediate completions, requests.opDone
// for the last one), during the backend's wait or, for the emulation, from its fd events. It
// never sees a callback, and the core never sees an SQE.
type reqDriver interface {
	// start hands r (state stQueued) to the backend; it goes to the kernel at the loop's next
	// wait at the latest.
	start(r *reqRec)
	// cancel asks the backend to cancel r; its last completion follows (with ECANCELED, or
	// with the result if the operation won).
	cancel(r *reqRec)
	// cancelFd cancels every request on fd, as cancel does each.
	cancelFd(fd int32)
	// retime moves the deadline of r that the backend enforces itself (uring: a LINK_TIMEOUT
	// in the kernel) to after from now (<= 0: none) and reports true, or reports false when the
	// backend enforces none for r (the loop's timer does).
	retime(r *reqRec, after time.Duration) bool
	// check returns nil when the backend can run op here, else an error that names the
	// kernel feature op needs (wrapping unix.EOPNOTSUPP); the emulation runs every op but
	// OpSQE (which SubmitSQE refuses itself).
	check(op Op) error
	// needWait reports whether the backend must enter its wait (not only look at the fds):
	// requests to submit, or completions to collect.
	needWait() bool
	// newGroup sets up the backend's side of a buffer group.
	newGroup(g *BufferGroup) error
	// provide gives buffer bid of g back to the kernel's side.
	provide(g *BufferGroup, bid int)
	// closeGroup releases the backend's side of g.
	closeGroup(g *BufferGroup) error
	// shutdown cancels every request before the backend closes; their callbacks do not run.
	shutdown()
	// fixFile puts fd's file in the backend's registered-file table at slot fd (on) or
	// empties the slot (first submitting what is prepared when live: requests on fd are not
	// all done), and reports whether requests on fd are to use the slot; the emulation has no
	// table (false, nil).
	fixFile(fd int32, on, live bool) (bool, error)
}

// Dispatch bounds: one Once runs at most reqBatch completions, and at most reqPerTurn of one
// multishot request (a flood on one socket cannot hold the others back: liburing #1043).
const (
	reqBatch   = 32
	reqPerTurn = 8
)

// requests is the loop's request state; created by the first request.
type requests struct {
	l        *Loop
	drv      reqDriver
	ring     bool // drv is the uring backend's
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
	// pollFirst: a Recv on an fd whose last Recv drained the socket (reqFd.drained, see
	// recvDone) is prepared with IORING_RECVSEND_POLL_FIRST (uring with Linux 5.19; not
	// WithRecvPollFirst(false)): the kernel waits for the socket to be readable before its
	// first attempt instead of making one that finds nothing and then waiting. Set by the
	// driver's check of OpRecv.
	pollFirst bool
	onTmr     func(t *Timer)
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
		rq.drv, rq.ring = d, true
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

// CheckOp reports whether requests of op can run on this loop: nil when they can (natively on
// uring, emulated on epoll and poll), else the error a request of op would get, so that a
// caller can choose another way before it has an fd to try (a server that falls back from
// RecvMultishot to Recv on an older kernel). Errors: ErrNotOwner, ErrClosed, one wrapping
// unix.EINVAL for an op no request call makes, and on uring one wrapping unix.EOPNOTSUPP that
// names the kernel feature op needs (probed once with IORING_REGISTER_PROBE, as the request
// calls do: AcceptMultishot and CloseFd need Linux 5.19, RecvMultishot 6.0, Read, Write, Recv
// and Send 5.6). OpSQE is always nil here on uring (the kernel judges the caller's SQE) and
// ErrNeedsUring elsewhere.
func (l *Loop) CheckOp(op Op) error {
	if !l.owned() {
		return ErrNotOwner
	}
	if l.closed {
		return ErrClosed
	}
	if op == 0 || int(op) >= len(opNames) {
		return fmt.Errorf("ringev: CheckOp: unknown op %d: %w", op, unix.EINVAL)
	}
	if op == OpSQE && l.beName != "uring" {
		return fmt.Errorf("ringev: SubmitSQE on the %q backend: %w", l.beName, ErrNeedsUring)
	}
	if err := l.reqs().opOK(op); err != nil {
		return fmt.Errorf("ringev: %v: %w", op, err)
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
// its own since it last made one, an op checked before): the same checks as newReqChecked's,
// which gives each failure its error. The steady branch also counts the record on its fd,
// which submit does for the others.
func (l *Loop) newReq(op Op, fd int, buf []byte, needBuf bool, cb Callback, token uint64) (*reqRec, error) {
	if rq := l.req; rq != nil && l.owned() && !l.closed && cb != nil &&
		uint(fd) < uint(len(rq.fds)) && rq.okOps&(1<<op) != 0 &&
		(!needBuf || len(buf) > 0 && len(buf) <= maxRideLen) {
		if f := &rq.fds[fd]; f.closeRec == nil && f.okSeq == rq.ownSeq {
			r := rq.alloc()
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

// fdState returns the state of fd, growing the table.
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
	var r *reqRec
	if n := len(rq.free); n > 0 {
		r = rq.recs[rq.free[n-1]]
		rq.free = rq.free[:n-1]
	} else {
		r = &reqRec{rq: rq, idx: uint32(len(rq.recs)), timer: Timer{loop: rq.l, index: -1}}
		r.timer.handler = rq.onTmr
		r.timer.Data = r
		rq.recs = append(rq.recs, r)
	}
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

// push appends an entry to the completion queue and returns it, for the caller to write
// every field of: in place, where append builds the entry on the stack first and copies it
// (-6 instructions a completion, callgrind).
func (rq *requests) push() *cqEntry {
	n := len(rq.cq)
	if n < cap(rq.cq) {
		rq.cq = rq.cq[:n+1]
	} else {
		rq.cq = append(rq.cq, cqEntry{})
	}
	return &rq.cq[n]
}

// complete queues an intermediate completion of a multishot request (the CQE's res and
// flags; CQEFMore is implied).
func (rq *requests) complete(r *reqRec, res int32, flags uint32) {
	rq.cq = append(rq.cq, r.entry(res, flags|uring.CQEFMore))
}

// entry is r's completion entry for a CQE's res and flags; a group buffer it carries is taken
// (BufferGroup.take) in the order the CQEs arrive, which is the order the kernel used them.
func (r *reqRec) entry(res int32, flags uint32) cqEntry {
	e := cqEntry{rec: r, gen: r.gen, res: res, flags: flags}
	if r.op == OpRecvMultishot && flags&uring.CQEFBuffer != 0 {
		e.off = r.takeBuffer(res, flags)
	}
	return e
}

// takeBuffer takes the group buffer of a RecvMultishot's CQE (BufferGroup.take) and returns
// the data's offset in it.
func (r *reqRec) takeBuffer(res int32, flags uint32) int32 {
	return r.group.take(int(flags>>uring.CQEBufferShift), max(res, 0), flags&uring.CQEFBufMore != 0)
}

// opDone is told the result of r's operation (its last CQE, or the emulation's last
// syscall). It finishes a short write or send (the rest goes as the same request), re-arms a
// multishot request that the kernel ended while it still works (a RecvMultishot that got
// data, an AcceptMultishot that got a connection), parks a RecvMultishot whose group ran dry,
// and otherwise queues the last completion.
func (rq *requests) opDone(r *reqRec, res int32, flags uint32) {
	if r.state == stFree || r.state == stDone {
		return
	}
	switch r.op {
	case OpWrite, OpSend:
		if res > 0 {
			r.done += int(res)
			if r.done < len(r.buf) {
				if !r.cancelReq && !r.dead() {
					r.state = stQueued
					rq.drv.start(r)
					return
				}
				r.timedOut = r.timedOut || r.dead()
				res = -int32(unix.ECANCELED)
			}
		}
		if res >= 0 {
			res = int32(r.done)
		}
	case OpAcceptMultishot:
		if res >= 0 && !r.cancelReq {
			rq.complete(r, res, flags)
			r.state = stQueued
			rq.drv.start(r)
			return
		}
	case OpRecvMultishot:
		if res > 0 && !r.cancelReq {
			rq.complete(r, res, flags)
			r.state = stQueued
			rq.drv.start(r)
			return
		}
		if res == -int32(unix.ENOBUFS) && !r.cancelReq && !r.group.closed {
			// The group ran dry: the kernel's multishot ended, nothing is lost (the data
			// stays in the socket). Tell the callback, and re-arm when a buffer comes back.
			rq.cq = append(rq.cq, cqEntry{rec: r, gen: r.gen, res: res, flags: uring.CQEFMore})
			if r.group.avail > 0 {
				r.state = stQueued
				rq.drv.start(r)
				return
			}
			r.state = stParked
			r.group.parked = append(r.group.parked, r)
			return
		}
	}
	if r.timedOut && (res == -int32(unix.ECANCELED) || res == -int32(unix.EINTR)) {
		res = -int32(unix.ETIME)
	}
	if r.op == OpRecvMultishot && r.group.closed && res == -int32(unix.ENOBUFS) {
		res = -int32(unix.ECANCELED) // BufferGroup.Close cancelled it; the kernel saw the group go first
	}
	rq.finish(r, res, flags)
}

// finishesAsIs reports whether opDone(r, res, flags), r's last result, would only pass res
// to finish: r is a read or recv, or a write or send that res completes in one piece, with
// no deadline that passed (opDone turns its ECANCELED into ETIME).
func finishesAsIs(r *reqRec, res int32) bool {
	switch r.op {
	case OpRead, OpRecv:
		return !r.timedOut
	case OpWrite, OpSend:
		return !r.timedOut && r.done == 0 && int(res) == len(r.buf)
	}
	return false
}

// dead reports whether r's deadline has passed.
func (r *reqRec) dead() bool { return r.deadline != 0 && r.rq.l.now() >= r.deadline }

// finish queues r's last completion and closes its fd if a CloseFd waits for it.
func (rq *requests) finish(r *reqRec, res int32, flags uint32) {
	if r.timer.index >= 0 {
		rq.l.timers.remove(r.timer.index)
	}
	if (r.op == OpWrite || r.op == OpSend) && r.done > 0 && res < 0 {
		r.res = res
		res = int32(r.done) // with the error in r.res: see runTurn
	} else {
		r.res = 0
	}
	r.state = stDone
	// entry's work, written out: entry is not inlined (append's cost), and this is every
	// request's path (+13 instructions a request as a call, callgrind).
	e := rq.push()
	e.rec, e.gen, e.res, e.flags, e.off = r, r.gen, res, flags&^uring.CQEFMore, 0
	if r.op == OpRecvMultishot && flags&uring.CQEFBuffer != 0 {
		e.off = r.takeBuffer(res, flags)
	}
	if r.counted {
		f := &rq.fds[r.fd]
		f.recvDone(r, res)
		f.live--
		if f.live == 0 && f.closeRec != nil {
			rq.closeNow(f)
		}
	}
}

// finishSteady is finish for the steady CQE (ringReqs.cqe): r's only one, which opDone would
// pass on unchanged (finishesAsIs), with no deadline timer to remove, no count before an error
// and no group buffer.
func (rq *requests) finishSteady(r *reqRec, res int32, flags uint32) {
	r.cqes, r.state, r.res = 0, stDone, 0
	e := rq.push()
	e.rec, e.gen, e.res, e.flags, e.off = r, r.gen, res, flags&^uring.CQEFMore, 0
	if r.counted {
		f := &rq.fds[r.fd]
		f.recvDone(r, res)
		if f.live--; f.live == 0 && f.closeRec != nil {
			rq.closeNow(f)
		}
	}
}

// recvDone notes, for a Recv's last completion (res), whether it drained the socket: it took
// less than its buffer (see requests.pollFirst).
func (f *reqFd) recvDone(r *reqRec, res int32) {
	if r.op == OpRecv {
		f.drained = res >= 0 && int(res) < len(r.buf)
	}
}

// closeNow closes the fd of a CloseFd whose fd has no request left.
func (rq *requests) closeNow(f *reqFd) {
	c := f.closeRec
	f.closeRec = nil
	res := int32(0)
	if err := rq.setFixed(c.fd, false); err != nil { // no request on fd is left to use the slot
		res = -int32(errnoOf(err))
	}
	if err := unix.Close(int(c.fd)); err != nil && res == 0 {
		res = -int32(err.(unix.Errno))
	}
	rq.finish(c, res, 0)
}

// reqWait is the timeout of Once's wait: 0 while completions wait for their callbacks
// (the wait only looks at the fds, whose turn it is), else timeout.
func (l *Loop) reqWait(timeout int64) int64 {
	if l.req != nil && l.req.pending() {
		return 0
	}
	return timeout
}

// pending reports whether completions wait for their callbacks.
func (rq *requests) pending() bool { return rq.head < len(rq.cq) }

// runTurn runs a batch of completions if it is their turn: completions and fd handlers take
// turns when both are ready (an fd handler ran since the last batch, or no fd readiness is
// left to serve). It reports whether it ran one.
func (l *Loop) runTurn() bool {
	rq := l.req
	if l.dispatch == rq.seen && (l.cacheLeft > 0 || l.nfd > 0 && l.waitSeq == rq.seenWait) {
		// The fd handlers' turn: no fd handler ran since the last batch, and one is ready, or
		// the fds were not looked at since (Once then looks without blocking: see reqWait).
		return false
	}
	rq.seen, rq.seenWait = l.dispatch, l.waitSeq
	rq.turn++
	n := len(rq.cq) - rq.head
	if n > reqBatch {
		n = reqBatch
	}
	ran := false
	// The callbacks run with the nesting guard set, once for the batch: endBatch resets it
	// (and cbFd) also when a callback panics out of Once.
	l.inside = true
	defer rq.endBatch()
	// A taken entry is not cleared: its record stays in rq.recs anyway (records are recycled,
	// never freed), so it keeps nothing else reachable.
	for i := 0; i < n && !l.closed; i++ {
		e := rq.cq[rq.head]
		rq.head++
		r := e.rec
		if r.gen != e.gen {
			continue
		}
		if manyCQEs[r.op] {
			if r.turnSeq != rq.turn {
				r.turnSeq, r.turnRuns = rq.turn, 0
			}
			if r.turnRuns >= reqPerTurn {
				rq.deferRequest(e) // behind the others: at most reqPerTurn per batch
				continue
			}
			r.turnRuns++
		}
		ran = true
		// r's callback for e, and r freed after its last completion: written out here (a
		// call per completion costs). Every field of the Completion is written, each once
		// (it is the heap's: no zeroing pass first).
		c := &rq.comp
		c.Request = Request{rec: r, gen: r.gen}
		c.Op, c.Fd, c.Token, c.More = r.op, int(r.fd), r.token, e.flags&uring.CQEFMore != 0
		c.SockNonempty = e.flags&uring.CQEFSockNonempty != 0 && (r.op == OpRecv || r.op == OpRecvMultishot)
		c.bid = -1
		if c.group != nil {
			c.group = nil
		}
		c.N, c.Err = int(e.res), nil
		switch {
		case e.res >= 0 && (r.res >= 0 || c.More):
			// a result, no error (r.res < 0: a Write's or Send's error after a part, below)
		case r.res < 0 && !c.More:
			c.Err = errnoErr(r.res) // Write, Send: N is the count before the error
		default: // e.res < 0
			c.N, c.Err = 0, errnoErr(e.res)
		}
		switch r.op {
		case OpRead, OpRecv:
			if c.Err == nil {
				c.Buf = r.buf[:c.N]
			} else {
				c.Buf = nil
			}
		case OpWrite, OpSend:
			c.Buf = r.buf
		case OpRecvMultishot:
			c.Buf = nil
			if e.flags&uring.CQEFBuffer != 0 {
				bid := int32(e.flags >> uring.CQEBufferShift)
				c.group, c.bid = r.group, bid
				c.Buf = r.group.slab[int(bid)*r.group.size+int(e.off):][:max(c.N, 0):max(c.N, 0)]
			}
		default:
			c.Buf = nil
		}
		cb := r.cb
		rq.cbFd = r.fd
		if !c.More {
			rq.release(r) // before the callback: it may make new requests with this record
		}
		cb(c)
	}
	if l.closed {
		return true
	}
	if rq.head == len(rq.cq) {
		rq.cq, rq.head = rq.cq[:0], 0
	} else if rq.head > len(rq.cq)/2 && rq.head > 64 {
		k := copy(rq.cq, rq.cq[rq.head:])
		clear(rq.cq[k:])
		rq.cq, rq.head = rq.cq[:k], 0
	}
	return ran
}

// manyCQEs marks the ops whose request can have more than one completion (multishot ones, and
// SubmitSQE's, which may be): at most reqPerTurn of theirs run in one batch.
var manyCQEs = [256]bool{OpRecvMultishot: true, OpAcceptMultishot: true, OpSQE: true}

// deferRequest puts e, the completion just taken from the queue, and every later queued
// completion of e's request behind the other requests' completions, keeping their order: a
// multishot request's callback must get its completions in the order the kernel posted them
// (a stream's bytes). It allocates nothing once rq.scratch has grown to the largest group.
func (rq *requests) deferRequest(e cqEntry) {
	rest := rq.cq[rq.head:]
	mine := append(rq.scratch[:0], e)
	k := 0
	for _, x := range rest {
		if x.rec == e.rec {
			mine = append(mine, x)
		} else {
			rest[k] = x
			k++
		}
	}
	rq.cq = append(rq.cq[:rq.head+k], mine...)
	clear(mine)
	rq.scratch = mine[:0]
}

// endBatch ends runTurn's batch of callbacks (deferred: a callback may panic).
func (rq *requests) endBatch() { rq.l.inside, rq.cbFd = false, -1 }

// deadlinePassed is a request's deadline timer.
func (rq *requests) deadlinePassed(t *Timer) {
	r := t.Data.(*reqRec)
	switch r.state {
	case stQueued, stInflight:
		r.timedOut = true
		r.cancelReq = true
		rq.drv.cancel(r)
	case stParked:
		r.timedOut = true
		r.group.unpark(r)
		rq.finish(r, -int32(unix.ETIME), 0)
	}
}

// shutdown is Loop.Close's: every request is cancelled, no callback runs. A connection that an
// Accept or AcceptMultishot accepted and no callback got is closed (it would leak), and so is
// every fd whose CloseFd was waiting for its requests to end.
func (rq *requests) shutdown() {
	rq.dead = true
	rq.drv.shutdown()
	for i := range rq.fds {
		if c := rq.fds[i].closeRec; c != nil {
			rq.fds[i].closeRec = nil
			unix.Close(int(c.fd))
		}
	}
	for _, e := range rq.cq[rq.head:] {
		if e.rec != nil && e.rec.gen == e.gen {
			closeAccepted(e.rec.op, e.res)
		}
	}
	clear(rq.cq)
	rq.cq, rq.head = nil, 0
}

// closeAccepted closes res, the new fd of an accept op's completion that no callback will get.
func closeAccepted(op Op, res int32) {
	if (op == OpAccept || op == OpAcceptMultishot) && res >= 0 {
		unix.Close(int(res))
	}
}

// live returns the record a handle names while its request is pending, or nil.
func (h Request) live() *reqRec {
	if h.rec == nil || h.rec.gen != h.gen || h.rec.state == stFree || h.rec.state == stDone {
		return nil
	}
	return h.rec
}

// Cancel asks the loop to cancel the request. It is asynchronous: the callback still runs
// once more, with ECANCELED, or with the result if the operation completed first (a cancel
// never undoes I/O that happened). A request that is still queued for the kernel is cancelled
// without reaching it. On a stale handle (the last completion ran) it does nothing. It returns
// ErrNotOwner from a goroutine other than the loop's, ErrClosed after Close, else nil.
func (h Request) Cancel() error {
	if h.rec == nil {
		return nil
	}
	rq := h.rec.rq
	if !rq.l.owned() {
		return ErrNotOwner
	}
	if rq.l.closed {
		return ErrClosed
	}
	r := h.live()
	if r == nil || r.cancelReq {
		return nil
	}
	r.cancelReq = true
	if r.state == stParked {
		r.group.unpark(r)
		rq.finish(r, -int32(unix.ECANCELED), 0)
		return nil
	}
	rq.drv.cancel(r)
	return nil
}

// SetTimeout gives the request a deadline d from now (d > 0; 0 removes it): when it passes
// before the operation completes, the operation is cancelled and the callback gets an error
// wrapping unix.ETIME (for a multishot request: its last completion). On the uring backend a
// one-shot request whose deadline is set right after making it (before another request is
// made, and before the loop next enters the ring) carries it as an IORING_OP_LINK_TIMEOUT SQE
// (Linux 5.5) linked to its SQE; otherwise, and on the other backends, a loop timer cancels
// it. A later SetTimeout replaces
// the deadline, also one the kernel holds as a LINK_TIMEOUT: the loop moves that with
// IORING_TIMEOUT_UPDATE|IORING_LINK_TIMEOUT_UPDATE (Linux 5.15; a LINK_TIMEOUT cannot be
// removed, so 0 moves it out of reach), at its next io_uring_enter (a deadline that had
// passed by then has ended the request; on kernels before 5.15 the first deadline stays). A write or send that the
// loop finishes in several steps keeps one deadline for all. On a stale handle it does
// nothing. Errors: ErrNotOwner, ErrClosed.
func (h Request) SetTimeout(d time.Duration) error {
	if h.rec == nil {
		return nil
	}
	rq := h.rec.rq
	l := rq.l
	if !l.owned() {
		return ErrNotOwner
	}
	if l.closed {
		return ErrClosed
	}
	r := h.live()
	if r == nil {
		return nil
	}
	if r.timer.index >= 0 {
		l.timers.remove(r.timer.index)
	}
	if d <= 0 {
		r.deadline = 0
	} else if r.deadline = l.deadlineIn(d); r.deadline == 0 {
		r.deadline = 1
	}
	if rq.ring && r.state == stQueued && !multishot(r.op) {
		return nil // a LINK_TIMEOUT at submission, if a deadline is left
	}
	if rq.drv.retime(r, d) || d <= 0 {
		return nil // the LINK_TIMEOUT made at submission is moved (or made to never fire)
	}
	rq.armTimer(r)
	return nil
}

// armTimer puts r's deadline timer in the loop's timer heap (no allocation: it lives in r).
func (rq *requests) armTimer(r *reqRec) {
	l := rq.l
	l.timerSeq++
	r.timer.deadline, r.timer.seq = r.deadline, l.timerSeq
	l.timers.push(&r.timer)
}

// multishot reports whether op posts several completions.
func multishot(op Op) bool {
	return op == OpRecvMultishot || op == OpAcceptMultishot || op == OpSQE
}

// Pending reports whether the request's last completion has not run yet.
func (h Request) Pending() bool { return h.rec != nil && h.rec.gen == h.gen && h.rec.state != stFree }

// Read reads into buf from fd at offset off (-1: the file position, as read(2); else as
// pread(2)): IORING_OP_READ (Linux 5.6) on uring. N is the bytes read, 0 at end of file;
// Buf is buf[:N]. The errors of every request call, and the rules for buf (the kernel's
// until the last callback) and fd (close it with CloseFd), are in Request's documentation.
func (l *Loop) Read(fd int, buf []byte, off int64, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpRead, fd, buf, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.off = max(off, -1)
	return l.req.submit(r), nil
}

// Write writes all of buf to fd at offset off (-1: the file position): IORING_OP_WRITE (5.6)
// on uring. The loop finishes a short write (the rest goes as the same request, with the same
// deadline), so N is len(buf); on an error after a part was written, N counts that part.
func (l *Loop) Write(fd int, buf []byte, off int64, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpWrite, fd, buf, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.off = max(off, -1)
	return l.req.submit(r), nil
}

// Recv receives into buf from socket fd with flags (unix.MSG_*): IORING_OP_RECV (5.6) on
// uring. N is the bytes received, 0 when the peer shut down; Buf is buf[:N].
func (l *Loop) Recv(fd int, buf []byte, flags int, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpRecv, fd, buf, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.flags = int32(flags)
	return l.req.submit(r), nil
}

// Send sends all of buf on socket fd with flags (unix.MSG_*; MSG_NOSIGNAL is always added:
// a closed peer gives EPIPE, never SIGPIPE): IORING_OP_SEND (5.6) on uring. A send that the
// kernel completes short (the socket buffer filled) is finished by the loop: the rest goes
// as the same request, so N is len(buf), or, on an error after a part was sent, that part.
func (l *Loop) Send(fd int, buf []byte, flags int, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpSend, fd, buf, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.flags = int32(flags | unix.MSG_NOSIGNAL)
	return l.req.submit(r), nil
}

// Accept accepts one connection on listening socket fd with accept4(2) flags
// (unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC): IORING_OP_ACCEPT (5.5) on uring. N is the new fd.
func (l *Loop) Accept(fd int, flags int, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpAccept, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.flags = int32(flags)
	return l.req.submit(r), nil
}

// AcceptMultishot accepts connections on fd until cancelled or an error: one completion per
// connection (N the new fd, More set), IORING_ACCEPT_MULTISHOT (5.19) on uring. Its last
// completion has More unset (ECANCELED after Cancel or CloseFd).
func (l *Loop) AcceptMultishot(fd int, flags int, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpAcceptMultishot, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.flags = int32(flags)
	return l.req.submit(r), nil
}

// Connect connects socket fd to sa (*unix.SockaddrInet4, *unix.SockaddrInet6 or
// *unix.SockaddrUnix): IORING_OP_CONNECT (5.5) on uring. N is 0. An sa of another type gives
// an error wrapping unix.EAFNOSUPPORT.
func (l *Loop) Connect(fd int, sa unix.Sockaddr, cb Callback, token uint64) (Request, error) {
	if err := l.checkReq(OpConnect, fd, cb); err != nil {
		return Request{}, err
	}
	var raw unix.RawSockaddrAny
	n, err := rawSockaddr(sa, &raw)
	if err != nil {
		return Request{}, fmt.Errorf("ringev: connect on fd %d: %w", fd, err)
	}
	r, err := l.newReq(OpConnect, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.sa, r.salen = raw, n
	return l.req.submit(r), nil
}

// Fsync flushes fd to its device (fdatasync(2) when datasync): IORING_OP_FSYNC (5.1) on uring.
func (l *Loop) Fsync(fd int, datasync bool, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpFsync, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	if datasync {
		r.flags = int32(uring.FsyncDatasync)
	}
	return l.req.submit(r), nil
}

// CloseFd closes fd through the loop: it cancels every request on fd
// (IORING_OP_ASYNC_CANCEL with IORING_ASYNC_CANCEL_FD|IORING_ASYNC_CANCEL_ALL, Linux 5.19, on
// uring), disarms the fd events that watch it, and closes it with close(2) once the last of
// those requests has completed (their callbacks get ECANCELED, or their result if it won; a
// Loop.Close meanwhile cancels them and closes the fd, without the callbacks), so
// that the kernel holds no reference and a socket's peer sees EOF at once; a later file that
// takes the fd number never gets an old request's completion. The fd events that watch fd
// stay open, disarmed (flags 0), and lose their auto-close: closing them later, or the loop,
// does not close the number again (by then another file's). A multishot request on fd ends
// with it. N is 0, or Err is close(2)'s error. Requests for fd made before the callback runs
// fail with ErrFdClosing.
func (l *Loop) CloseFd(fd int, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpClose, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	rq := l.req
	f := rq.fdState(int32(fd))
	f.closeRec = r
	r.state = stInflight
	if uint(fd) < uint(len(l.slots)) && l.slots[fd] != nil && !l.slots[fd].internal {
		s := l.slots[fd]
		s.mark = 0
		l.dropNews(s)
		l.disarmSlot(s)
		for _, ev := range s.events {
			ev.autoClose = false // CloseFd closes the fd: an event's Close must not close the number again
		}
	}
	h := Request{rec: r, gen: r.gen}
	for _, g := range rq.groups {
		for i := 0; i < len(g.parked); i++ {
			if p := g.parked[i]; p.fd == int32(fd) {
				g.unpark(p)
				i--
				p.cancelReq = true
				rq.finish(p, -int32(unix.ECANCELED), 0)
			}
		}
	}
	rq.drv.cancelFd(int32(fd))
	if f.live == 0 && f.closeRec == r {
		rq.closeNow(f)
	}
	return h, nil
}

// RegisterFile puts fd's file in the ring's registered-file table on the uring backend, at
// slot fd, so that the requests on fd made from now on carry IOSQE_FIXED_FILE (Linux 5.1): the
// kernel then neither looks fd up nor takes a reference on its file for every request
// (fd_busy16 in completion-inline mode: 1.34M to 1.49M events/s, 2026-12-01; the loop thread's
// CPU time per event ~770 to ~670 ns). Each call costs one io_uring_register(2)
// (IORING_REGISTER_FILES_UPDATE, Linux 5.5); the first also makes the table, sparse, of
// min(RLIMIT_NOFILE, 65536) slots (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE,
// Linux 5.19), so RegisterFile needs Linux 5.19. See io_uring_register(2).
//
// The table holds a reference to the file: close fd with CloseFd (which empties the slot once
// fd's requests are done, then closes it) or an fd event's auto-close (which empties it first),
// or call UnregisterFile before close(2). A close(2) alone leaves the file open (a socket's peer
// sees no EOF, a pipe's writer no EPIPE) until UnregisterFile(fd) or Loop.Close (which empties
// the table before it returns), and the requests made on fd afterwards still reach that old
// file, even when a new file has taken the number. A second call for a registered fd does
// nothing (it does not put a new file of that number in the slot).
//
// On the other backends (epoll, poll, uring-poll: their requests make their own syscalls) it
// checks fd as below and does nothing else. Errors: ErrNotOwner, ErrClosed, ErrFdClosing while a
// CloseFd closes fd, an error wrapping unix.EBADF for a negative fd, one of the loop's own fds
// or one that names no open file; on uring also one wrapping unix.ERANGE for an fd at or above
// the table's size, and one wrapping the io_uring_register(2) errno otherwise, which names the
// operation: a kernel without sparse tables (before 5.19) gives unix.EINVAL and an error naming
// IORING_RSRC_REGISTER_SPARSE. After an error, requests on fd work as before, unregistered.
func (l *Loop) RegisterFile(fd int) error {
	return l.fixFile(fd, true)
}

// UnregisterFile empties fd's slot in the ring's registered-file table (see RegisterFile; one
// io_uring_register(2), IORING_REGISTER_FILES_UPDATE, Linux 5.5): requests on fd made from now
// on look fd up again, and a close(2) of fd then releases the file once the requests made before
// (which keep the registered file) are done; after a close(2) of a registered fd it is what
// releases the old file. Requests on fd that are prepared but not yet in the kernel are
// submitted first (one io_uring_enter(2)), so that they still find the slot. An fd that is not
// registered (a closed number too), and every backend but uring, do nothing. Errors:
// ErrNotOwner, ErrClosed, ErrFdClosing while a CloseFd closes fd, an error wrapping unix.EBADF
// for a negative fd or one of the loop's own fds, and on uring one wrapping the
// io_uring_enter(2) or io_uring_register(2) errno.
func (l *Loop) UnregisterFile(fd int) error {
	return l.fixFile(fd, false)
}

func (l *Loop) fixFile(fd int, on bool) error {
	what := "RegisterFile"
	if !on {
		what = "UnregisterFile"
	}
	if !l.owned() {
		return ErrNotOwner
	}
	if l.closed {
		return ErrClosed
	}
	if fd < 0 || fd > 1<<31-1 {
		return fmt.Errorf("ringev: %s(%d): %w", what, fd, unix.EBADF)
	}
	if l.ownsFd(fd) {
		return fmt.Errorf("ringev: %s(%d): one of the loop's own fds: %w", what, fd, unix.EBADF)
	}
	rq := l.reqs()
	if int(fd) < len(rq.fds) && rq.fds[fd].closeRec != nil {
		return fmt.Errorf("ringev: %s(%d): %w", what, fd, ErrFdClosing)
	}
	if on {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return fmt.Errorf("ringev: %s(%d): not an open file: %w", what, fd, err)
		}
	} else if int(fd) >= len(rq.fds) || !rq.fds[fd].fixed {
		return nil // not registered (a closed number too: UnregisterFile after a close(2))
	}
	if err := rq.setFixed(int32(fd), on); err != nil {
		return fmt.Errorf("ringev: %s(%d): %w", what, fd, err)
	}
	return nil
}

// setFixed puts fd's file in the ring's registered-file table (on) or empties its slot: the
// work of RegisterFile and UnregisterFile once their checks passed.
func (rq *requests) setFixed(fd int32, on bool) error {
	f := rq.fdState(fd)
	if f.fixed == on {
		return nil
	}
	// The driver reads f.fixed when it prepares an SQE (ringReqs.fdBits): a continuation
	// prepared after this (the rest of a short write, a multishot re-armed) follows it; the
	// requests already in the kernel keep the registered file.
	fixed, err := rq.drv.fixFile(fd, on, f.live > 0)
	f.fixed = fixed
	return err
}

// unfixBeforeClose empties fd's slot in the ring's registered-file table, if fd is registered
// (RegisterFile), before the loop closes fd itself (an fd event's auto-close): else the table
// keeps the file open after the close (a socket's peer sees no EOF), and the requests made on a
// file that takes the number next would reach the old one through the slot.
func (l *Loop) unfixBeforeClose(fd int) error {
	if rq := l.req; rq != nil && fd >= 0 && fd < len(rq.fds) && rq.fds[fd].fixed {
		if err := rq.setFixed(int32(fd), false); err != nil {
			return fmt.Errorf("ringev: close fd %d: emptying its registered-file slot: %w", fd, err)
		}
	}
	return nil
}

// registerEveryFd (tests only: SetRegisterEveryFd) registers the fd of every request in the
// ring's file table when the loop first sees the number (RegisterFile), so that the request
// suite runs with IOSQE_FIXED_FILE.
var registerEveryFd bool

// errnoOf returns the errno err wraps, or EIO.
func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}

// SubmitSQE submits sqe, prepared with package uring's Prep methods, as a request: the loop
// copies it into its ring's SQ (at once, or at its next wait, as every request: see Request),
// setting its user_data (the one given is replaced), and runs cb with the CQE's Res as N (or its error), once per CQE of a multishot
// op (More set while the CQE has IORING_CQE_F_MORE). keep is held until the last CQE: memory
// the SQE addresses must stay reachable that long (pass the buffer, or nil if the SQE
// addresses nothing or the caller keeps it). sqe.Fd, when >= 0 and not a fixed file, is the
// request's fd for CloseFd. Links (SQEIOLink, SQEIOHardlink) and SQECQESkipSuccess are
// refused (an error wrapping unix.EINVAL): each request must post its own CQE. On a backend
// other than "uring" it returns an error wrapping ErrNeedsUring that names the backend.
func (l *Loop) SubmitSQE(sqe *uring.SQE, keep []byte, cb Callback, token uint64) (Request, error) {
	if !l.owned() {
		return Request{}, ErrNotOwner
	}
	if l.closed {
		return Request{}, ErrClosed
	}
	if sqe == nil {
		return Request{}, fmt.Errorf("ringev: SubmitSQE: nil SQE: %w", unix.EINVAL)
	}
	if cb == nil {
		return Request{}, fmt.Errorf("ringev: SubmitSQE: %w", ErrNilCallback)
	}
	if !l.reqs().ring {
		return Request{}, fmt.Errorf("ringev: SubmitSQE on the %q backend: %w", l.beName, ErrNeedsUring)
	}
	if sqe.Flags&(uring.SQEIOLink|uring.SQEIOHardlink|uring.SQECQESkipSuccess) != 0 {
		return Request{}, fmt.Errorf("ringev: SubmitSQE: IOSQE_IO_LINK, IO_HARDLINK and CQE_SKIP_SUCCESS are not allowed: %w", unix.EINVAL)
	}
	fd := int(sqe.Fd)
	if fd < 0 || sqe.Flags&uring.SQEFixedFile != 0 {
		fd = -1
	}
	rq := l.req
	if fd >= 0 {
		if l.ownsFd(fd) {
			return Request{}, fmt.Errorf("ringev: SubmitSQE on fd %d: one of the loop's own fds: %w", fd, unix.EBADF)
		}
		if err := rq.checkFdOpen(fd); err != nil {
			return Request{}, fmt.Errorf("ringev: SubmitSQE on fd %d: %w", fd, err)
		}
		if f := rq.fdState(int32(fd)); f.closeRec != nil {
			return Request{}, fmt.Errorf("ringev: SubmitSQE on fd %d: %w", fd, ErrFdClosing)
		}
	}
	r := rq.alloc()
	r.op, r.cb, r.token, r.keep, r.sqe = OpSQE, cb, token, keep, *sqe
	r.fd = int32(max(fd, 0))
	r.noFd = fd < 0
	return rq.submit(r), nil
}

// rawSockaddr writes sa into raw and returns its length.
func rawSockaddr(sa unix.Sockaddr, raw *unix.RawSockaddrAny) (uint32, error) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(raw))
		p.Family = unix.AF_INET
		p.Port = htons(uint16(a.Port))
		p.Addr = a.Addr
		return unix.SizeofSockaddrInet4, nil
	case *unix.SockaddrInet6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(raw))
		p.Family = unix.AF_INET6
		p.Port = htons(uint16(a.Port))
		p.Scope_id = a.ZoneId
		p.Addr = a.Addr
		return unix.SizeofSockaddrInet6, nil
	case *unix.SockaddrUnix:
		p := (*unix.RawSockaddrUnix)(unsafe.Pointer(raw))
		p.Family = unix.AF_UNIX
		if len(a.Name) >= len(p.Path) {
			return 0, fmt.Errorf("unix socket path of %d bytes: %w", len(a.Name), unix.EINVAL)
		}
		for i := 0; i < len(a.Name); i++ {
			p.Path[i] = int8(a.Name[i])
		}
		n := 2 + len(a.Name)
		if len(a.Name) > 0 && a.Name[0] == '@' {
			p.Path[0] = 0 // abstract
		} else if len(a.Name) > 0 {
			n++ // the terminating NUL
		}
		return uint32(n), nil
	}
	return 0, fmt.Errorf("address %T: %w", sa, unix.EAFNOSUPPORT)
}

// htons is the port in network byte order, as the kernel reads it from memory.
func htons(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	b[0], b[1] = byte(p>>8), byte(p)
	return p
}

// BufferGroup is a group of equal buffers that a RecvMultishot receives into, the kernel
// picking one per completion: a provided buffer ring on uring (IORING_REGISTER_PBUF_RING,
// Linux 5.19; io_uring_register_buf_ring(3)), with incremental consumption where the kernel
// has it (IOU_PBUF_RING_INC, 6.12: completions share a buffer, each with its own slice; see
// Incremental), a free list in the emulation. Each completion
// holds one buffer until it is released (Completion.ReleaseBuffer or Release). When every
// buffer is held, a RecvMultishot gets ENOBUFS (More set: no data is lost, it stays in the
// socket) and the loop re-arms it when a buffer is released. A group belongs to its loop's
// goroutine.
type BufferGroup struct {
	l      *Loop
	bgid   uint16
	size   int
	n      int
	slab   []byte
	free   []uint16 // emulation: free buffer IDs
	ring   *uring.BufRing
	avail  int       // buffers the kernel (or the emulation) can pick
	parked []*reqRec // RecvMultishots waiting for a buffer
	closed bool
	inc    bool    // incremental consumption (IOU_PBUF_RING_INC)
	off    []int32 // per buffer: bytes the kernel used so far (incremental consumption)
	refs   []int32 // per buffer: completions holding a view of it, not released yet
	out    []bool  // per buffer: the kernel is done with it (it comes back when refs is 0)
}

// take records that a completion holds n bytes of buffer bid (more: the kernel goes on
// filling it, CQEFBufMore) and returns where they start in it.
func (g *BufferGroup) take(bid int, n int32, more bool) int32 {
	if bid >= g.n {
		return 0
	}
	off := g.off[bid]
	g.refs[bid]++
	if more {
		g.off[bid] += n
	} else {
		g.off[bid], g.out[bid] = 0, true
		g.avail--
	}
	return off
}

// Incremental reports whether the group's buffers are consumed incrementally: several
// completions share one buffer, one after the other (IOU_PBUF_RING_INC, Linux 6.12, on the
// uring backend where the kernel has it).
func (g *BufferGroup) Incremental() bool { return g.inc }

// NewBufferGroup makes a group of n buffers (a power of two, at most 32768) of size bytes
// each. Errors: ErrNotOwner, ErrClosed, one wrapping unix.EINVAL for a bad n or size, one
// wrapping unix.ENOSPC when 65,536 groups are open (a group ID is 16 bits; the ID of a closed
// group is given again only after every other free one), and on uring the register error (naming IORING_REGISTER_PBUF_RING, 5.19, when the kernel lacks it).
func (l *Loop) NewBufferGroup(n, size int) (*BufferGroup, error) {
	if !l.owned() {
		return nil, ErrNotOwner
	}
	if l.closed {
		return nil, ErrClosed
	}
	if n <= 0 || n > 32768 || n&(n-1) != 0 || size <= 0 || size > 1<<30 {
		return nil, fmt.Errorf("ringev: NewBufferGroup(%d, %d): want a power of two <= 32768 buffers of 1 byte to 1 GiB: %w", n, size, unix.EINVAL)
	}
	rq := l.reqs()
	if !rq.nextGroupID() {
		return nil, fmt.Errorf("ringev: NewBufferGroup: all 65536 buffer group IDs are held by open groups: %w", unix.ENOSPC)
	}
	g := &BufferGroup{l: l, bgid: rq.bgid, size: size, n: n, slab: make([]byte, n*size),
		off: make([]int32, n), refs: make([]int32, n), out: make([]bool, n)}
	if err := rq.drv.newGroup(g); err != nil {
		return nil, err
	}
	rq.groups = append(rq.groups, g)
	g.avail = n
	return g, nil
}

// nextGroupID advances rq.bgid to the next buffer group ID that no open group holds: the IDs
// are 16 bits, and a loop that makes and closes a group per connection wraps them while a
// long-lived group still holds its ID (registering it again fails with EEXIST). It keeps
// counting up rather than taking the lowest free ID, so that a closed group's ID comes back as
// late as possible. It reports false when all 65,536 IDs are held.
func (rq *requests) nextGroupID() bool {
	if len(rq.groups) >= 1<<16 {
		return false
	}
	for {
		rq.bgid++
		used := false
		for _, g := range rq.groups {
			if g.bgid == rq.bgid {
				used = true
				break
			}
		}
		if !used {
			return true
		}
	}
}

// buf returns the view of buffer bid holding n bytes.
func (g *BufferGroup) buf(bid, n int) []byte {
	o := bid * g.size
	return g.slab[o : o+n : o+g.size]
}

// Len returns the number of buffers, Size the bytes of each.
func (g *BufferGroup) Len() int { return g.n }

// Size returns the bytes of each buffer.
func (g *BufferGroup) Size() int { return g.size }

// Release gives back one completion's hold on buffer id (Completion.BufferID): the buffer goes
// back to the kernel once no completion holds it and the kernel is done with it (with
// incremental consumption, several completions share a buffer), and the RecvMultishots that
// ran dry are re-armed. Release each completion's buffer once; releasing a buffer no
// completion holds, an out-of-range id, and calls from other goroutines are ignored.
func (g *BufferGroup) Release(id int) {
	if g.closed || id < 0 || id >= g.n || !g.l.owned() || g.l.closed || g.refs[id] == 0 {
		return
	}
	if g.refs[id]--; g.refs[id] > 0 || !g.out[id] {
		return
	}
	g.out[id] = false
	g.l.req.drv.provide(g, id)
	g.avail++
	if len(g.parked) > 0 {
		rq := g.l.req
		for i, r := range g.parked {
			g.parked[i] = nil
			r.state = stQueued
			rq.drv.start(r)
		}
		g.parked = g.parked[:0]
	}
}

// unpark removes r from the parked list.
func (g *BufferGroup) unpark(r *reqRec) {
	for i, x := range g.parked {
		if x == r {
			g.parked = append(g.parked[:i], g.parked[i+1:]...)
			return
		}
	}
}

// Close releases the group. A RecvMultishot still using it is cancelled: its last completion
// is ECANCELED (or, when the operation won the race, its data), on every backend. Errors: the
// unregister error on uring.
func (g *BufferGroup) Close() error {
	if g.closed || !g.l.owned() {
		return nil
	}
	g.closed = true
	rq := g.l.req
	if !g.l.closed {
		for _, r := range rq.recs {
			if r.group == g && r.op == OpRecvMultishot && r.state != stFree && r.state != stDone {
				Request{rec: r, gen: r.gen}.Cancel()
			}
		}
	}
	for i, x := range rq.groups {
		if x == g {
			rq.groups = append(rq.groups[:i], rq.groups[i+1:]...)
			break
		}
	}
	for _, r := range g.parked {
		g.l.req.finish(r, -int32(unix.ECANCELED), 0)
	}
	g.parked = nil
	if g.l.closed {
		return nil
	}
	return g.l.req.drv.closeGroup(g)
}

// RecvMultishot receives from socket fd into buffers of g until cancelled, end of file or an
// error: one completion per receive (Buf a view of the group buffer holding it, More set;
// release the buffer when done with it), IORING_OP_RECV with IORING_RECV_MULTISHOT (Linux
// 6.0) and a provided buffer ring on uring. When g has no free buffer, a completion with
// ENOBUFS and More set says so; the request re-arms itself when a buffer is released, and no
// data is lost. At most 8 of its completions run per Once, behind those of other requests.
// Its last completion (More unset) is N 0 at end of file, or an error (ECANCELED after
// Cancel or CloseFd, ETIME at its deadline).
func (l *Loop) RecvMultishot(fd int, g *BufferGroup, flags int, cb Callback, token uint64) (Request, error) {
	if g == nil || g.closed || g.l != l {
		if err := l.checkReq(OpRecvMultishot, fd, cb); err != nil {
			return Request{}, err
		}
		return Request{}, fmt.Errorf("ringev: recv-multishot on fd %d: nil, closed or foreign BufferGroup: %w", fd, unix.EINVAL)
	}
	r, err := l.newReq(OpRecvMultishot, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.group, r.flags = g, int32(flags)
	return l.req.submit(r), nil
}
