//go:build unix

package ringev

// IO: a read, write, recv or send request that its caller makes once and submits many times.
// The loop keeps its op, fd, buffer, argument and callback between submissions, so that a
// submission only hands the operation to the backend (on uring: writes its SQE) and a
// completion only calls the callback with the result. An IO is a request record the pool does
// not take back (reqRec.io is set): every path of requests (deadlines, cancels, CloseFd, short
// writes, Loop.Close) runs it as it runs a Request's record.

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// IO is a read, write, recv or send request made once (Loop.NewRead, NewWrite, NewRecv,
// NewSend) and submitted any number of times, one submission at a time (Submit). Its fd,
// buffer, argument (offset or msg flags) and callback stay with it, so that a submission
// costs the operation and nothing else: on the uring backend its SQE; on epoll and poll the
// emulation's syscall. Its callback gets the result as it is (IOFunc), and may submit the IO
// again. Every rule of requests holds for each submission (Request's documentation): the
// buffer is the kernel's from Submit to the callback, Cancel and CloseFd end a pending
// submission with ECANCELED, SetTimeout gives it a deadline, a Write or Send is finished by
// the loop, and a completion never reaches the callback of a freed IO. An IO belongs to its
// loop: use it on the loop's goroutine only, and Free it when done (an IO not freed keeps its
// record, about 600 bytes, for the loop's life).
type IO struct {
	l   *Loop
	rec *reqRec // its record (rec.rare.x is this IO); &freedRec after Free
}

// freedRec is the record of every freed IO: its state is never stFree, so that Submit's one
// test of the state sends a freed IO to refused.
var freedRec = reqRec{state: stDone}

// IOFunc is an IO's callback. The loop runs it on its goroutine when a submission completes,
// as a handler (Once from inside it returns ErrNested). n is the result when err is nil: the
// bytes read or received (0 at end of file, or when the peer shut down), or the bytes written
// or sent (all of the buffer: the loop finishes a short write or send). err is nil or a
// *RequestError, as Completion.Err (unix.ECANCELED after Cancel or CloseFd, unix.ETIME after
// the deadline); with a Write or Send, n then counts the bytes written before the error.
type IOFunc func(x *IO, n int, err error)

// Errors of the IO calls, beside those of the request calls.
var (
	// ErrIOPending: Submit, SetBuf or Free on an IO whose submission has not completed yet.
	ErrIOPending = errors.New("ringev: IO is pending (its callback has not run yet)")
	// ErrIOFreed: a call on an IO after Free.
	ErrIOFreed = errors.New("ringev: IO was freed")
)

// ioCallback is the Callback of every IO's record: the record's cb must not be nil, but an
// IO's completions go to its IOFunc (reqRare.fn) and never to it.
var ioCallback Callback = func(*Completion) {}

// NewRead makes an IO that reads into buf from fd at offset off (-1: the file position, as
// read(2); else as pread(2), the same offset at every submission): IORING_OP_READ (Linux 5.6)
// on uring. Nothing is submitted until Submit. Errors: those of Loop.Read (Request's
// documentation), and one wrapping ErrNilCallback for a nil fn.
func (l *Loop) NewRead(fd int, buf []byte, off int64, fn IOFunc) (*IO, error) {
	return l.newIO(OpRead, fd, buf, max(off, -1), fn)
}

// NewWrite makes an IO that writes all of buf to fd at offset off (-1: the file position):
// IORING_OP_WRITE (Linux 5.6) on uring. Errors: as NewRead's.
func (l *Loop) NewWrite(fd int, buf []byte, off int64, fn IOFunc) (*IO, error) {
	return l.newIO(OpWrite, fd, buf, max(off, -1), fn)
}

// NewRecv makes an IO that receives into buf from socket fd with flags (unix.MSG_*):
// IORING_OP_RECV (Linux 5.6) on uring. Errors: as NewRead's.
func (l *Loop) NewRecv(fd int, buf []byte, flags int, fn IOFunc) (*IO, error) {
	return l.newIO(OpRecv, fd, buf, int64(flags), fn)
}

// NewSend makes an IO that sends all of buf on socket fd with flags (unix.MSG_*; MSG_NOSIGNAL
// is always added): IORING_OP_SEND (Linux 5.6) on uring. Errors: as NewRead's.
func (l *Loop) NewSend(fd int, buf []byte, flags int, fn IOFunc) (*IO, error) {
	return l.newIO(OpSend, fd, buf, int64(flags|unix.MSG_NOSIGNAL), fn)
}

// newIO makes an IO's record: a request record, checked as a request call checks it, that is
// not pending (state stFree, not counted on its fd nor in rq.live), on its fd's list of IOs,
// and that the pool never takes back until Free. The IO is allocated here, once.
func (l *Loop) newIO(op Op, fd int, buf []byte, arg int64, fn IOFunc) (*IO, error) {
	if fn == nil {
		if err := l.checkReq(op, fd, ioCallback); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("ringev: %v on fd %d: %w", op, fd, ErrNilCallback)
	}
	r, err := l.newReqChecked(op, fd, buf, true, ioCallback, 0)
	if err != nil {
		return nil, err
	}
	rq := l.req
	f := &rq.fds[fd]
	f.w-- // (take counted it in the live count)
	rq.live--
	r.setArg(arg)
	x := &IO{l: l, rec: r}
	r.io = true
	rx := r.rareOf() // an IO holds its rare part until Free
	rx.fn, rx.x, rx.keep = fn, x, buf
	r.ioOwn, r.ioFixed, r.ioDrained, r.ioCloseWait = rq.ownSeq, f.is(fdFixed), false, false
	rx.ioNext = rq.ios(int32(fd))
	rq.setFdRare(int32(fd), rq.closeRec(int32(fd)), r)
	rq.prepIO(r)
	return x, nil
}

// refused returns the error of a Submit that cannot go (see Submit), or, when its check failed
// only because the loop made an fd of its own since the IO's fd was last checked
// (reqRec.ioOwn), checks the fd again and submits.
//
//go:noinline
func (x *IO) refused() error {
	r := x.rec
	if r == &freedRec {
		return ErrIOFreed
	}
	rq := r.rq
	l := rq.l
	f := &rq.fds[r.fd]
	switch {
	case l.closed:
		return ErrClosed
	case r.state != stFree:
		return ErrIOPending
	case r.ioOwn == 0 && f.is(fdClosing): // (a CloseFd closed the fd)
		return fmt.Errorf("ringev: %v on fd %d: %w", r.op, r.fd, ErrFdClosing)
	case r.ioOwn == 0:
		return fmt.Errorf("ringev: %v on fd %d: CloseFd closed it since the IO was made: %w", r.op, r.fd, unix.EBADF)
	}
	if err := l.checkReq(r.op, int(r.fd), ioCallback); err != nil {
		return err
	}
	r.ioOwn = rq.ownSeq
	return x.Submit()
}

// SetBuf makes buf the IO's buffer from its next submission on (a Send's next bytes, say).
// Errors: ErrNotOwner, ErrIOPending, ErrIOFreed, ErrEmptyBuffer, and one wrapping unix.EINVAL
// for a buffer larger than a request takes.
func (x *IO) SetBuf(buf []byte) error {
	r := x.rec
	if !x.l.owned() {
		return ErrNotOwner
	}
	switch {
	case r == &freedRec:
		return ErrIOFreed
	case r.state != stFree:
		return ErrIOPending
	case len(buf) == 0:
		return fmt.Errorf("ringev: %v on fd %d: %w", r.op, r.fd, ErrEmptyBuffer)
	case len(buf) > maxRideLen:
		return fmt.Errorf("ringev: %v on fd %d: buffer of %d bytes, at most %d: %w", r.op, r.fd, len(buf), maxRideLen, unix.EINVAL)
	}
	r.rare.keep = buf
	r.setBytes(buf)
	r.rq.prepIO(r)
	return nil
}

// Buf returns the IO's buffer (all of it: n in the callback says how much a read filled); nil
// after Free.
func (x *IO) Buf() []byte {
	if x.rec == &freedRec {
		return nil
	}
	return x.rec.rare.keep
}

// Fd returns the IO's fd; -1 after Free.
func (x *IO) Fd() int {
	if x.rec == &freedRec {
		return -1
	}
	return int(x.rec.fd)
}

// Pending reports whether a submission of the IO has not completed yet (its callback has not
// run); false after Free. Ask on the loop's goroutine.
func (x *IO) Pending() bool { return x.rec != &freedRec && x.rec.state != stFree }

// Cancel asks the loop to cancel the pending submission, as Request.Cancel does: the callback
// still runs, with ECANCELED or with the result if the operation completed first. Without one
// it does nothing. Errors: ErrNotOwner, ErrClosed.
func (x *IO) Cancel() error {
	if !x.l.owned() {
		return ErrNotOwner
	}
	return x.handle().Cancel()
}

// SetTimeout gives the pending submission a deadline d from now, as Request.SetTimeout does
// (the callback gets an error wrapping unix.ETIME when it passes first); the next submission
// has none until it is given one. Without a pending submission it does nothing. Errors:
// ErrNotOwner, ErrClosed.
func (x *IO) SetTimeout(d time.Duration) error {
	if !x.l.owned() {
		return ErrNotOwner
	}
	return x.handle().SetTimeout(d)
}

// handle returns the Request of the pending submission: one that names nothing when none is
// pending (Request.live is nil for a record in state stFree) or the IO was freed.
func (x *IO) handle() Request {
	if x.rec == &freedRec {
		return Request{}
	}
	return Request{rec: x.rec, gen: x.rec.gen}
}

// Free gives the IO's record back to the loop; the IO must not be used after (its calls
// return ErrIOFreed). Errors: ErrNotOwner, ErrIOPending while a submission has not completed
// (Cancel it, and Free it in its callback), ErrIOFreed. After Loop.Close it frees nothing.
func (x *IO) Free() error {
	r := x.rec
	if !x.l.owned() {
		return ErrNotOwner
	}
	switch {
	case r == &freedRec:
		return ErrIOFreed
	case r.state != stFree:
		return ErrIOPending
	}
	x.rec = &freedRec
	rq := r.rq
	if r.ioOwn != 0 { // off its fd's list (a CloseFd took it off: ioOwn 0)
		fd := int32(r.fd)
		if first := rq.ios(fd); first == r {
			rq.setFdRare(fd, rq.closeRec(fd), r.rare.ioNext)
		} else {
			p := first
			for p.rare.ioNext != r {
				p = p.rare.ioNext
			}
			p.rare.ioNext = r.rare.ioNext
		}
	}
	r.io, r.ioKey = false, 0 // (recycle gives the rare part back, forgetting fn, the IO and its buffer)
	if x.l.closed {
		return nil
	}
	rq.live++ // recycle counts it out
	rq.recycle(r)
	return nil
}

// ioDone runs r's IOFunc for its submission's last completion (the loop's Completion's N and
// Err): r, retired, is ready to be submitted again (its per-submission fields cleared) before
// the callback runs.
func (rq *requests) ioDone(r *reqRec) {
	n, err := rq.comp.N, rq.comp.Err
	flags := r.flags
	r.reqVars = reqVars{flags: flags}
	rq.live--
	x := r.rare
	x.fn(x.x, n, err)
}
