//go:build unix

package ringev

// Request records and their pool: a record per request, recycled, with a generation that tells
// its uses apart; the per-fd state; and the checks a request call makes before it takes one.
// A record holds the core's fields only: a backend makes each record inside a struct of its
// own that adds its state (reqDriver.newRec: ringRec on uring, emulRec in the emulation).

import (
	"fmt"
	"slices"
	"time"
	"unsafe"

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

// reqRec is one request's record, recycled through the pool (requests.free); gen tells its uses
// apart.
// It is the first field of the backend's record (reqDriver.newRec), which the backend reaches
// from it without a lookup.
type reqRec struct {
	// rare holds what few requests use (a deadline's timer, Connect's address, SubmitSQE's
	// SQE, an error), nil for the others: taken from the pool's spares when first needed
	// (rareOf) and given back when the record is (recycle), so that an idle connection's
	// pending recv holds none.
	rare *reqRare
	rq   *requests
	cb   Callback
	// The request as it was made (the loop's Completion gets them for each callback, see
	// requests.comp): its token, and its buffer (Read, Write, Recv, Send: whole until the last
	// completion, which gives the callback the bytes that arrived) as its data pointer, length
	// and capacity (bytes, setBytes), or a RecvMultishot's group in bp (grp).
	token      uint64
	bp         unsafe.Pointer
	blen, bcap uint32
	idx        uint32
	gen        uint32
	fd         int32
	// An IO's record (io set; request_io.go) is the caller's IO's, not the pool's, between
	// submissions (state stFree), and its completions go to the IO's IOFunc (in its rare part,
	// with the IO, its buffer and its SQE: an IO holds its rare part until Free). An IO keeps
	// what its submissions need to know of its fd in the record, so that a submission and its
	// completion do not look at reqFd: ioOwn is requests.ownSeq when the fd was last found not
	// to be one of the loop's own (as reqFd.okSeq), 0 once a CloseFd closed the fd (the IO is
	// off the fd's ios list then; ownSeq counts from 1); ioFixed is reqFd's fdFixed (setFixed
	// updates it), ioDrained a Recv's fdDrained; ioCloseWait: the submission counts in
	// reqFd.live, where a CloseFd waits for it.
	ioOwn uint32
	// off is the file offset (-1: the file position); in the pool, 1 + the index of the next
	// free record, 0 for none (nextFree: take sets it).
	off   int64
	op    Op
	state uint8
	// fast: the operation's next result is its last and goes to the callback as it is: a
	// read, write, recv or send started with no deadline, no cancel asked and nothing
	// written before (set by the driver's start; cleared by whatever changes one of those).
	fast                                bool
	io, ioFixed, ioDrained, ioCloseWait bool
	reqVars                             // cleared by release in one struct store
}

// bytes returns the request's buffer (Read, Write, Recv, Send), nil for the other ops.
func (r *reqRec) bytes() []byte { return r.bytesN(r.blen) }

// bytesN returns the request's buffer cut to its first n bytes (at most blen), built from its
// parts as the runtime lays a slice out: unsafe.Slice and a cut would check what setBytes and
// the caller hold true, a few instructions for every completion.
func (r *reqRec) bytesN(n uint32) []byte {
	h := bufHeader{r.bp, int(min(n, r.blen)), int(r.bcap)}
	return *(*[]byte)(unsafe.Pointer(&h))
}

// bufHeader is a []byte's layout: data pointer, length, capacity.
type bufHeader struct {
	p    unsafe.Pointer
	n, c int
}

// setBytes makes b the request's buffer (its capacity kept up to 4 GiB - 1, more than any
// request uses; its length is at most maxRideLen).
func (r *reqRec) setBytes(b []byte) {
	r.bp, r.blen, r.bcap = unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b)), uint32(min(cap(b), 1<<32-1))
}

// grp returns a RecvMultishot's group, which it keeps in bp (the op has no buffer of its own).
func (r *reqRec) grp() *BufferGroup { return (*BufferGroup)(r.bp) }

// reqRare is the part of a record that few requests use (see reqRec.rare), and that an IO's
// record holds from NewRead (or the others) to Free.
type reqRare struct {
	fn      IOFunc              // an IO's callback
	x       *IO                 // the IO
	ioNext  *reqRec             // the fd's next IO (reqFd.ios)
	timer   Timer               // the deadline's timer (emulation, multishot, or set after submission)
	timeout time.Duration       // SetTimeout's last d (for the error when the deadline passed)
	msg     *unix.Msghdr        // RecvMsg's and SendMsg's message
	sa      unix.RawSockaddrAny // Connect's address
	salen   uint32
	keep    []byte        // memory the op addresses, kept reachable until the last completion (SubmitSQE's)
	lastErr *RequestError // the last error a completion got (see compErr): kept with the part
	drv     rareDrv
}

// rareOf returns r's rare part, taking one (a spare, else a new one) if r has none. The
// deadline timer's Data is r while the part is r's.
func (r *reqRec) rareOf() *reqRare {
	if r.rare != nil {
		return r.rare
	}
	rq := r.rq
	var x *reqRare
	if n := len(rq.rares); n > 0 {
		x = rq.rares[n-1]
		rq.rares[n-1] = nil
		rq.rares = rq.rares[:n-1]
	} else {
		x = &reqRare{timer: Timer{loop: rq.l, index: -1, handler: rq.onTmr}}
	}
	x.timer.Data = r
	r.rare = x
	return x
}

// timerQueued reports whether r's deadline timer is in the loop's timer heap.
func (r *reqRec) timerQueued() bool { return r.rare != nil && r.rare.timer.index >= 0 }

// dropRare gives r's rare part back to the pool's spares (recycle): its deadline timer leaves
// the heap (finish took it out already) and what it kept reachable for the op is forgotten.
func (rq *requests) dropRare(r *reqRec) {
	x := r.rare
	r.rare = nil
	if x.timer.index >= 0 {
		rq.l.timers.remove(x.timer.index)
	}
	x.timer.Data, x.timeout, x.keep, x.msg, x.fn, x.x, x.ioNext = nil, 0, nil, nil, nil, nil, nil
	rq.rares = append(rq.rares, x)
}

// slow clears r.fast, and ioKey with it: the operation's next result takes the general way
// (an IO's CQE takes the shortest way, whose one test is ioKey's, only while fast holds).
func (r *reqRec) slow() { r.fast, r.ioKey = false, 0 }

// reqVars is the part of a record that one use of it changes after newReq filled it in:
// release clears it with one struct store (a few wide stores, not one per field).
type reqVars struct {
	deadline int64 // loop ns; 0: none
	done     int32 // Write, Send: bytes written so far (a buffer holds at most maxRideLen)
	flags    int32 // msg flags, accept4 flags, fsyncData
	res      int32 // a Write's or Send's error after a part was written (see finish), else 0
	// ioKey is, on the uring backend, the high half of the user_data (tag, kind, generation)
	// of the IO's submission that IO.Submit put in the SQ itself, else 0: its CQE, when it
	// matches, takes run's shortest way (the record is an IO's, in flight, still fast: slow
	// clears it, and so does closeIOs when a CloseFd waits for it). A record's gen moves at
	// each completion, so an older key never matches.
	ioKey uint32
	// turnSeq is the dispatch batch (requests.turn, its low 16 bits) in which turnRuns counts
	// the record's completions (a multishot request's: reqPerTurn per batch at most). A request
	// that waits exactly a multiple of 2^16 batches between two completions finds its old
	// count, and may have its first completion put behind the batch's others.
	turnSeq   uint16
	turnRuns  int16
	noFd      bool // SubmitSQE without an fd: not counted in requests.fds[fd].live
	cancelReq bool // Cancel (or CloseFd, or the deadline) asked
	timedOut  bool // the deadline passed
	turn      bool // a RecvMultishot's receive is a turn: one buffer, no wait (BufferGroup.pump)
}

// reqFd is the core's state for one fd number. What few fds have (a waiting CloseFd, IOs) is
// in requests.fdRare, keyed by the fd, with a flag here: the table, indexed by fd number,
// holds 8 bytes per number (a power-of-two size, so that indexing rq.fds is a shift, not a
// multiply).
type reqFd struct {
	// w is the count of records on this fd not yet finished (live, the low 28 bits: 2^28 live
	// records on one fd cannot fit in memory) and the fd's flags (fdFixed,
	// fdDrained, fdClosing, fdHasIOs) in one word: a record counted in and out adds or takes 1.
	w uint32
	// okSeq is requests.ownSeq when the number was found not to be one of the loop's own fds,
	// and 0 while a CloseFd closes it: a request on fd takes the fast way (newReq) only while
	// okSeq == requests.ownSeq, one compare for both.
	okSeq uint32
}

// The flags of reqFd.w.
const (
	fdLive    = 1<<28 - 1 // the mask of the live count
	fdFixed   = 1 << 28   // the file is in the backend's registered-file table at slot fd (RegisterFile)
	fdDrained = 1 << 29   // the last Recv on fd took less than its buffer: the socket was empty then
	fdClosing = 1 << 30   // a CloseFd waits for its records to end (fdRare.closeRec)
	fdHasIOs  = 1 << 31   // IOs were made on fd (fdRare.ios)
)

// live is the count of records on f's fd not yet finished.
func (f *reqFd) live() int32 { return int32(f.w & fdLive) }

// is reports whether flag is set.
func (f *reqFd) is(flag uint32) bool { return f.w&flag != 0 }

// set sets flag to on.
func (f *reqFd) set(flag uint32, on bool) {
	if on {
		f.w |= flag
	} else {
		f.w &^= flag
	}
}

// countIn counts a record on f's fd in the live count (countOut takes it out).
func (f *reqFd) countIn() { f.w++ }

// countOut takes a finished record out of the live count and reports whether a CloseFd now
// closes the fd: none is left and one waits (fdClosing).
func (f *reqFd) countOut() bool {
	f.w--
	return f.w&(fdLive|fdClosing) == fdClosing
}

// fdRare is the part of an fd's state that few fds have (requests.fdRare; see reqFd).
type fdRare struct {
	closeRec *reqRec // a CloseFd waiting for the fd's records to end (reqFd's fdClosing)
	// ios lists the IOs made on fd (through reqRare.ioNext) that no CloseFd has closed: CloseFd
	// and RegisterFile tell them, as an IO's submission and completion do not look at reqFd.
	ios *reqRec
}

// closeRec returns the CloseFd waiting for fd's records to end, or nil.
func (rq *requests) closeRec(fd int32) *reqRec {
	if !rq.fds[fd].is(fdClosing) {
		return nil
	}
	return rq.fdRare[fd].closeRec
}

// ios returns the first of the IOs made on fd (reqRare.ioNext links the others), or nil.
func (rq *requests) ios(fd int32) *reqRec {
	if !rq.fds[fd].is(fdHasIOs) {
		return nil
	}
	return rq.fdRare[fd].ios
}

// setFdRare sets fd's rare part (closeRec, ios) and its flags; an empty one leaves fdRare.
func (rq *requests) setFdRare(fd int32, closeRec, ios *reqRec) {
	f := &rq.fds[fd]
	f.set(fdClosing, closeRec != nil)
	f.set(fdHasIOs, ios != nil)
	if closeRec == nil && ios == nil {
		delete(rq.fdRare, fd)
		return
	}
	if rq.fdRare == nil {
		rq.fdRare = make(map[int32]fdRare)
	}
	rq.fdRare[fd] = fdRare{closeRec: closeRec, ios: ios}
}

// requests is the loop's request state; created by the first request.
type requests struct {
	// reqShared: the part the loop reads (Loop.rs): live (records in use), held (CQEs the
	// uring driver holds in its ring for their callbacks), queued (len(cq) - head), seen,
	// seenWait, ownSeq, cbFd, cbRec, turnErr.
	reqShared
	l    *Loop
	drv  reqDriver
	recs []*reqRec
	free uint32 // the pool: 1 + the index of the first free record (a list through reqRec.nextFree), 0 for none
	fds  []reqFd
	// fdRare holds what few fds have (a waiting CloseFd, IOs), with a flag in their reqFd.
	fdRare map[int32]fdRare
	// cq holds the completions waiting for their callbacks (from cq[head]) that are not CQEs
	// the uring driver holds in its ring (held counts those): the emulation's, and the uring
	// driver's others (a multishot request's, a cancel's before the kernel saw the request).
	// Each has the position at which the loop learned of it (pos, see cqEntry.pos).
	cq      []cqEntry
	head    int
	pos     uint32    // the position an entry pushed now takes (cqEntry.pos)
	scratch []cqEntry // deferRequest's
	turn    uint64
	bgid    uint16
	groups  []*BufferGroup
	okOps   uint32     // bit op: drv.check(op) returned nil
	rares   []*reqRare // spare rare parts of records (reqRec.rareOf)
	// comp is what every Callback gets (Callback: valid only until it returns), filled for
	// each completion from its record (compOf) and the result: one per loop, not one per
	// record, so that a pending request's record holds none.
	comp  Completion
	dead  bool
	fixed bool // RegisterBuffers has registered the loop's fixed buffers
	onTmr func(t *Timer)
}

// reqSlots holds the requests layer's own pointers in the Loop (which embeds it, so that a
// request call reaches them at no cost); no code of the loop's files reads them (it has
// reqseam.go's: Loop.rs, rl and turner).
type reqSlots struct {
	req *requests // the requests' state, made by the first request
	// rt is the uring backend's request driver once a request was made there (else nil).
	rt *ringReqs
}

// closedSeq is requests.ownSeq once the loop is closed.
const closedSeq = ^uint32(0)

// reqs returns the loop's request state, creating it.
func (l *Loop) reqs() *requests {
	if l.req != nil {
		return l.req
	}
	return l.newRequests()
}

// newRequests creates the loop's request state.
func (l *Loop) newRequests() *requests {
	rq := &requests{l: l, reqShared: reqShared{ownSeq: 1, cbFd: -1}}
	rq.onTmr = rq.deadlinePassed
	if d := newRingReqs(l, rq); d != nil {
		rq.drv = d
	} else {
		rq.drv = &emulReqs{l: l, rq: rq}
	}
	l.req, l.rs, l.rd, l.rl = rq, &rq.reqShared, rq.drv, rq
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

// fastOK reports whether a request of op on fd with buf (needBuf: op needs a non-empty one) and
// cb may take the fast way: the checks of newReqChecked, made as few compares: fd is a number
// the loop has seen and found not to be one of its own since it last made one, and no CloseFd
// closes it (reqFd.okSeq, which also fails once the loop is closed); op was checked before. The
// caller has checked that it owns the loop. It is small enough to be inlined into each request call.
func (rq *requests) fastOK(op Op, fd int, buf []byte, needBuf bool, cb Callback) bool {
	return uint(fd) < uint(len(rq.fds)) && rq.fds[fd].okSeq == rq.ownSeq && rq.okOps&(1<<op) != 0 &&
		cb != nil && (!needBuf || uint(len(buf)-1) < maxRideLen)
}

// take pops a free record for op on fd (counted on fd unless op is OpClose or OpSQE, which
// SubmitSQE counts itself) and fills in the
// core's fields; take (not newReqChecked) makes the record of every request that passed
// fastOK.
func (rq *requests) take(op Op, fd int, buf []byte, cb Callback, token uint64) *reqRec {
	var r *reqRec
	if rq.free != 0 {
		r = rq.pop()
	} else {
		r = rq.grow()
	}
	r.off, r.cb = -1, cb
	r.op, r.fd, r.token = op, int32(fd), token
	r.setBytes(buf)
	if op != OpClose && op != OpSQE {
		rq.fds[fd].countIn()
	}
	return r
}

// setArg sets the argument of a read, write, recv or send (reqDriver.rw's arg): the file
// offset of a read or write, the msg flags of a recv or send.
func (r *reqRec) setArg(arg int64) {
	if r.op <= OpWrite {
		r.off = arg
	} else {
		r.flags = int32(arg)
	}
}

// newReq validates and takes a record for op on fd (needBuf: the op needs a non-empty buf):
// the fast way when fastOK, else newReqChecked, which gives each failure its error.
func (l *Loop) newReq(op Op, fd int, buf []byte, needBuf bool, cb Callback, token uint64) (*reqRec, error) {
	// The owner check comes first: another goroutine must not read the owner's request state.
	if l.owned() {
		if rq := l.req; rq != nil && rq.fastOK(op, fd, buf, needBuf, cb) {
			return rq.take(op, fd, buf, cb, token), nil
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
	if f.is(fdClosing) {
		return nil, fmt.Errorf("ringev: %v on fd %d: %w", op, fd, ErrFdClosing)
	}
	f.okSeq = rq.ownSeq // checkReq found it is not one of the loop's own fds
	if registerEveryFd && !f.is(fdFixed) && op != OpClose {
		fixed, err := rq.drv.fixFile(int32(fd), true, false)
		if err != nil {
			return nil, fmt.Errorf("ringev: %v on fd %d: registering it (a test's registerEveryFd): %w", op, fd, err)
		}
		f.set(fdFixed, fixed)
	}
	return rq.take(op, fd, buf, cb, token), nil
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

// nextFree is, for a record in the pool, 1 + the index of the next free record, 0 for none:
// kept in its off, which take sets.
func (r *reqRec) nextFree() uint32 { return uint32(r.off) }

// pop takes the first free record; one must be free (rq.free != 0).
func (rq *requests) pop() *reqRec {
	r := rq.recs[rq.free-1]
	rq.free = r.nextFree()
	rq.live++
	return r
}

// grow is take's when no record is free: it makes one (reqDriver.newRec) and adds it to the pool.
//
//go:noinline
func (rq *requests) grow() *reqRec {
	r := rq.drv.newRec()
	r.rq, r.idx = rq, uint32(len(rq.recs))
	if len(rq.recs) == cap(rq.recs) {
		// Twice the capacity, not append's quarter more past 256 records: what the growth
		// leaves behind as garbage (until the next collection) is then once the table's size,
		// not four times.
		rq.recs = slices.Grow(rq.recs, len(rq.recs)+16)
	}
	rq.recs = append(rq.recs, r)
	rq.live++
	return r
}

// retire makes r's handle stale, before its last callback runs: Cancel, SetTimeout and Pending
// on it see a request that has ended. The record goes back to the pool (recycle) after that
// callback, which reads r.c meanwhile.
func (r *reqRec) retire() {
	r.gen = (r.gen + 1) & genMask
	r.state = stFree
}

// recycle puts r, retired, back in the pool after its last callback: it forgets the callback,
// the buffer and the group (for the garbage collector) and the per-use fields.
func (rq *requests) recycle(r *reqRec) {
	r.cb, r.bp = nil, nil
	if r.rare != nil {
		rq.dropRare(r)
	}
	r.reqVars = reqVars{}
	rq.putFree(r)
}

// putFree puts r, free and its fields cleared, at the head of the pool's free list (nextFree).
func (rq *requests) putFree(r *reqRec) {
	r.off, rq.free = int64(rq.free), r.idx+1
	rq.live--
}

// genMask bounds the generation to what user_data carries (uring: 29 bits).
const genMask = 1<<29 - 1

// submit hands a new record to the driver and returns its handle (small enough to be inlined).
func (rq *requests) submit(r *reqRec) Request {
	r.state = stQueued
	rq.drv.start(r)
	return Request{rec: r, gen: r.gen}
}

// counted reports whether r counts in requests.fds[fd].live (take counts it): every request
// but a CloseFd and a SubmitSQE without an fd.
//
// An IO's submission counts only while a CloseFd waits for it (ioCloseWait).
func (r *reqRec) counted() bool {
	return r.op != OpClose && !r.noFd && (!r.io || r.ioCloseWait)
}

// compOf returns the loop's Completion (requests.comp) with the fields of r's request set:
// Request (the handle of r's use gen), Op, Fd and Token; the caller sets the others (N, Err,
// Buf, More, SockNonempty, the group buffer) before the callback. Small enough to be inlined.
func (rq *requests) compOf(r *reqRec, gen uint32) *Completion {
	c := &rq.comp
	c.Request, c.Op, c.Fd, c.Token = Request{rec: r, gen: gen}, r.op, int(r.fd), r.token
	return c
}
