//go:build unix

package ringev

// Requests: completion I/O beside fd events. A request is one operation (read, write, recv,
// send, accept, connect, close, fsync, a multishot recv into a buffer group, recvmsg, sendmsg,
// or any SQE prepared with package uring) and one callback, which the loop runs exactly once
// with the result: the byte count (or new fd), an error wrapping the errno, or ECANCELED when
// a cancel won. A multishot request's callback runs once per completion, every one but the
// last with Completion.More set.
//
// This file is the public API. The core's other halves: records and their pool
// (request_rec.go), what a backend does for requests (request_driver.go), completion dispatch
// (request_dispatch.go), deadlines (request_deadline.go), CloseFd (request_close.go), buffer
// groups (request_group.go), registered files (request_regfile.go), sockaddr conversion
// (request_sockaddr.go), SubmitSQE (request_sqe_uring.go), Poll (request_poll.go) and IO, a request made once and
// submitted many times (request_io.go). A backend runs requests through
// a reqDriver: the uring backend as SQEs on its ring (backend_uring_req_linux.go), the others
// with readiness and non-blocking syscalls (request_emul.go).

import (
	"errors"
	"fmt"

	"github.com/ringev/ringev/internal/onloop"
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
	OpRecvMsg                       // Loop.RecvMsg: recvmsg(2)
	OpSendMsg                       // Loop.SendMsg: sendmsg(2)
	OpPoll                          // Loop.Poll: one wait for an fd's readiness, as poll(2)
)

var opNames = [...]string{"", "read", "write", "recv", "send", "accept", "accept-multishot", "connect", "close", "fsync", "recv-multishot", "sqe", "recvmsg", "sendmsg", "poll"}

// String returns the operation's name ("read", "recv-multishot", ...).
func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Callback is a request's completion callback. The loop runs it on its goroutine, as a
// handler (Once from inside it returns ErrNested). c and what it points to belong to the loop
// and are valid only until the callback returns (the loop fills one Completion for every
// callback); copy what you need. Make one Callback per connection (a method value, or a
// function that reads Completion.Token) and reuse it for every request: a closure made for
// each request is a heap allocation per request.
type Callback func(c *Completion)

// Completion is what a Callback gets: the request's outcome.
type Completion struct {
	// Request is the request's handle (Cancel on it is a no-op once the last completion ran).
	Request Request
	// Op is the request's operation, Fd its fd, Token the token it was made with.
	Op    Op
	bid   int32 // buffer ID in group, or -1 (here: next to Op, in what would be padding)
	Fd    int
	Token uint64
	// N is the result when Err is nil: bytes read or received (0 at end of file), bytes written
	// or sent (all of the buffer: the loop finishes short writes and sends), the new fd for
	// Accept, 0 for Connect, Close and Fsync, the CQE's Res for SubmitSQE. With an error from
	// Write or Send, N counts the bytes written before it.
	N int
	// Err is nil or a *RequestError, which names the op, the fd and (for ETIME) the deadline,
	// and wraps the errno (errors.Is(err, unix.ECONNRESET) works); a callback may keep it:
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
}

// BufferID returns the ID of the buffer-group buffer this completion holds, or -1.
func (c *Completion) BufferID() int { return int(c.bid) }

// ReleaseBuffer gives the buffer-group buffer this completion holds back to its group (the
// same as c's BufferGroup.Release(c.BufferID()), so safe from any goroutine); Buf must not be
// used after it. It does nothing for a completion without one.
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
// CloseFd, RecvMultishot, RecvMsg, SendMsg, Poll, SubmitSQE) each return the request's handle, or an error, and
// then submit nothing:
// ErrNotOwner from a goroutine other than the loop's, ErrClosed after Close, one wrapping
// ErrNilCallback for a nil cb, unix.EBADF for a negative fd or one of the loop's own fds (its
// epoll set, io_uring instance, eventfds), ErrEmptyBuffer for an empty
// buffer where the op needs one, one wrapping unix.EINVAL for a buffer of more than 0x7ffff000
// bytes (the most one read(2) or write(2) moves), ErrFdClosing while a CloseFd waits to close
// the fd (see CloseFd), and on the uring
// backend one wrapping unix.EOPNOTSUPP that names the kernel feature the op needs when this
// kernel lacks it (probed once with IORING_REGISTER_PROBE: AcceptMultishot and CloseFd need
// Linux 5.19, RecvMultishot 6.0, Read, Write, Recv and Send 5.6, RecvMsg and SendMsg 5.3, Poll 5.1).
// token is handed back in Completion.Token.
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
	r.slow()
	if r.state == stParked {
		r.grp().unpark(r)
		rq.finish(r, -int32(unix.ECANCELED), 0)
		return nil
	}
	rq.drv.cancel(r)
	return nil
}

// Pending reports whether the request's last completion has not run yet. The loop changes the
// answer as it runs, so ask on the loop's goroutine (in a callback, or through Post).
func (h Request) Pending() bool { return h.rec != nil && h.rec.gen == h.gen && h.rec.state != stFree }

// Read reads into buf from fd at offset off (-1: the file position, as read(2); else as
// pread(2)): IORING_OP_READ (Linux 5.6) on uring. On an fd that cannot seek, every backend
// does as io_uring does: a pipe's offset is ignored, and a socket takes 0 alone (another
// offset fails with ESPIPE). N is the bytes read, 0 at end of file; Buf is buf[:N]. The
// errors of every request call, and the rules for buf (the kernel's until the last callback)
// and fd (close it with CloseFd), are in Request's documentation.
func (l *Loop) Read(fd int, buf []byte, off int64, cb Callback, token uint64) (Request, error) {
	if l.owned() { // first: another goroutine must not read the owner's request state
		if rq := l.req; rq != nil && rq.fastOK(OpRead, fd, buf, true, cb) {
			return rq.drv.rw(OpRead, fd, buf, max(off, -1), cb, token), nil
		}
	}
	r, err := l.newReqChecked(OpRead, fd, buf, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.off = max(off, -1)
	return l.req.submit(r), nil
}

// Write writes all of buf to fd at offset off (-1: the file position; on an fd that cannot
// seek, as for Read): IORING_OP_WRITE (5.6) on uring. The loop finishes a short write (the
// rest goes as the same request, with the same deadline), so N is len(buf); on an error after
// a part was written, N counts that part.
func (l *Loop) Write(fd int, buf []byte, off int64, cb Callback, token uint64) (Request, error) {
	if l.owned() { // first: another goroutine must not read the owner's request state
		if rq := l.req; rq != nil && rq.fastOK(OpWrite, fd, buf, true, cb) {
			return rq.drv.rw(OpWrite, fd, buf, max(off, -1), cb, token), nil
		}
	}
	r, err := l.newReqChecked(OpWrite, fd, buf, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.off = max(off, -1)
	return l.req.submit(r), nil
}

// Recv receives into buf from socket fd with flags (unix.MSG_*): IORING_OP_RECV (5.6) on
// uring. N is the bytes received, 0 when the peer shut down; Buf is buf[:N].
func (l *Loop) Recv(fd int, buf []byte, flags int, cb Callback, token uint64) (Request, error) {
	if l.owned() { // first: another goroutine must not read the owner's request state
		if rq := l.req; rq != nil && rq.fastOK(OpRecv, fd, buf, true, cb) {
			return rq.drv.rw(OpRecv, fd, buf, int64(flags), cb, token), nil
		}
	}
	r, err := l.newReqChecked(OpRecv, fd, buf, true, cb, token)
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
	if l.owned() { // first: another goroutine must not read the owner's request state
		if rq := l.req; rq != nil && rq.fastOK(OpSend, fd, buf, true, cb) {
			return rq.drv.rw(OpSend, fd, buf, int64(flags|unix.MSG_NOSIGNAL), cb, token), nil
		}
	}
	r, err := l.newReqChecked(OpSend, fd, buf, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.flags = int32(flags | unix.MSG_NOSIGNAL)
	return l.req.submit(r), nil
}

// init gives package server, through internal/onloop, the calls that skip the check of the
// caller (sendOwned, BufferGroup.releaseOwned).
func init() {
	onloop.Send = (*Loop).sendOwned
	onloop.Release = (*BufferGroup).releaseOwned
}

// sendOwned is Send for package server (internal/onloop.Send), whose caller runs on l's
// goroutine already (it checked so, or runs in one of l's callbacks): Send without its check
// of the caller. Code outside this module cannot reach it.
func (l *Loop) sendOwned(fd int, buf []byte, flags int, cb Callback, token uint64) (Request, error) {
	if rq := l.req; rq != nil && rq.fastOK(OpSend, fd, buf, true, cb) {
		return rq.drv.rw(OpSend, fd, buf, int64(flags|unix.MSG_NOSIGNAL), cb, token), nil
	}
	return l.Send(fd, buf, flags, cb, token)
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
	x := r.rareOf()
	x.sa, x.salen = raw, n
	return l.req.submit(r), nil
}

// RecvMsg receives one message from socket fd with flags (unix.MSG_*) into msg, as recvmsg(2):
// IORING_OP_RECVMSG (Linux 5.3) on uring. N is the bytes received; the kernel writes msg's
// Namelen, Controllen and Flags, and the name and control buffers. msg and what it points to
// (the name, the iovecs and their buffers, the control buffer) are the kernel's until the
// callback, as a request's buffer is: the loop keeps msg reachable, and through it the rest. A
// datagram socket's message is one datagram: this is UDP's receive with the sender's address.
func (l *Loop) RecvMsg(fd int, msg *unix.Msghdr, flags int, cb Callback, token uint64) (Request, error) {
	return l.msgReq(OpRecvMsg, fd, msg, flags, cb, token)
}

// SendMsg sends msg on socket fd with flags (unix.MSG_*; MSG_NOSIGNAL is always added), as
// sendmsg(2): IORING_OP_SENDMSG (Linux 5.3) on uring. N is what sendmsg(2) sent: all of a
// datagram (UDP's send to the address in msg's name); on a stream socket the loop does not
// finish a short one (use Send). msg and what it points to are the kernel's until the
// callback, as for RecvMsg.
func (l *Loop) SendMsg(fd int, msg *unix.Msghdr, flags int, cb Callback, token uint64) (Request, error) {
	return l.msgReq(OpSendMsg, fd, msg, flags|unix.MSG_NOSIGNAL, cb, token)
}

// msgReq makes a RecvMsg or SendMsg request: a nil msg gives an error wrapping unix.EINVAL.
func (l *Loop) msgReq(op Op, fd int, msg *unix.Msghdr, flags int, cb Callback, token uint64) (Request, error) {
	if err := l.checkReq(op, fd, cb); err != nil {
		return Request{}, err
	}
	if msg == nil {
		return Request{}, fmt.Errorf("ringev: %v on fd %d: nil msghdr: %w", op, fd, unix.EINVAL)
	}
	r, err := l.newReq(op, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.rareOf().msg, r.flags = msg, int32(flags)
	return l.req.submit(r), nil
}

// Fsync flushes fd to its device (fdatasync(2) when datasync): IORING_OP_FSYNC (5.1) on uring.
func (l *Loop) Fsync(fd int, datasync bool, cb Callback, token uint64) (Request, error) {
	r, err := l.newReq(OpFsync, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	if datasync {
		r.flags = fsyncData
	}
	return l.req.submit(r), nil
}
