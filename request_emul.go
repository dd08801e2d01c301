//go:build unix

package ringev

// The requests' emulation on the readiness backends (epoll, poll, uring-poll), as libuv and
// monoio do without io_uring: an fd event the loop keeps per fd with requests waiting, and the
// operations made with non-blocking syscalls when it reports the fd ready. A write, send or
// connect is tried at once (it usually succeeds); a read, recv or accept waits for readiness
// first (trying it at once would mostly cost a syscall that finds nothing). Regular files,
// which cannot be watched, are read, written and synced at once.

import (
	"errors"
	"time"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
	"golang.org/x/sys/unix"
)

// emulReqs is the readiness backends' reqDriver.
type emulReqs struct {
	l   *Loop
	rq  *requests
	fds []*emulFd      // by fd number; nil: the emulation has not seen it
	pfd [1]unix.PollFd // poll(2)'s argument for a Poll (pollNow), here so that it is not allocated per call
}

// emulRec is a request's record in the emulation: the core's record and its place in its fd's
// queue. newRec makes every record of an emulating loop, so emulOf may turn the core's *reqRec
// back into its emulRec.
type emulRec struct {
	reqRec
	qnext, qprev *emulRec // the fd's queue
	qlist        *reqList
}

// emulOf returns the emulRec whose first field r is: r is an emulating loop's record.
func emulOf(r *reqRec) *emulRec { return (*emulRec)(unsafe.Pointer(r)) }

func (e *emulReqs) newRec() *reqRec { return &new(emulRec).reqRec }

// emulGroup is a buffer group in the emulation: the core's group and its free list.
type emulGroup struct {
	BufferGroup
	free []uint16 // free buffer IDs
}

// emulGroupOf returns the emulGroup whose first field g is: g is an emulating loop's group.
func emulGroupOf(g *BufferGroup) *emulGroup { return (*emulGroup)(unsafe.Pointer(g)) }

// reqList is a FIFO of records linked through emulRec.qnext/qprev.
type reqList struct{ head, tail *emulRec }

func (q *reqList) push(r *emulRec) {
	r.qlist, r.qnext, r.qprev = q, nil, q.tail
	if q.tail != nil {
		q.tail.qnext = r
	} else {
		q.head = r
	}
	q.tail = r
}

func (q *reqList) pushFront(r *emulRec) {
	r.qlist, r.qprev, r.qnext = q, nil, q.head
	if q.head != nil {
		q.head.qprev = r
	} else {
		q.tail = r
	}
	q.head = r
}

func (q *reqList) remove(r *emulRec) {
	if r.qprev != nil {
		r.qprev.qnext = r.qnext
	} else {
		q.head = r.qnext
	}
	if r.qnext != nil {
		r.qnext.qprev = r.qprev
	} else {
		q.tail = r.qprev
	}
	r.qlist, r.qnext, r.qprev = nil, nil, nil
}

// emulFd is the emulation's state for one fd number.
type emulFd struct {
	e           *emulReqs
	fd          int32
	ev          *FdEvent // the loop's fd event on fd (kept, disarmed, while no request waits)
	counted     bool     // ev counts in Loop.nfd (a request waits), so Run keeps running
	rd, wr      reqList  // waiting for Read (read, recv, accept) and for Write (write, send, connect)
	notPollable bool     // the backend refused to watch fd (a regular file): ops run at once
	nonblock    bool     // fd was O_NONBLOCK and not a regular file or block device when first seen
	h           FdHandler
}

// fdOf returns the emulation's state for fd, making it (and growing the table) when new.
func (e *emulReqs) fdOf(fd int32) *emulFd {
	if int(fd) >= len(e.fds) {
		fds := make([]*emulFd, 2*len(e.fds)+int(fd)+16)
		copy(fds, e.fds)
		e.fds = fds
	}
	f := e.fds[fd]
	if f == nil {
		f = &emulFd{e: e, fd: fd, nonblock: nonblockStream(int(fd))}
		f.h = f.handle
		e.fds[fd] = f
	}
	return f
}

// writeSide reports whether op waits for Write readiness.
func writeSide(op Op) bool {
	return op == OpWrite || op == OpSend || op == OpConnect || op == OpSendMsg
}

// rw is reqDriver.rw: take's and start's work for a read, write, recv or send on an fd the
// emulation watches already, in one call; else take, then start.
func (e *emulReqs) rw(op Op, fd int, buf []byte, arg int64, cb Callback, token uint64) Request {
	rq := e.rq
	var f *emulFd
	if fd < len(e.fds) {
		f = e.fds[fd]
	}
	if rq.free == 0 || f == nil || f.notPollable {
		r := rq.take(op, fd, buf, cb, token)
		r.setArg(arg)
		e.start(r)
		return Request{rec: r, gen: r.gen}
	}
	r := emulOf(rq.pop())
	rq.fds[fd].countIn()
	r.cb = cb
	r.state, r.fast = stInflight, true
	r.op, r.fd, r.token = op, int32(fd), token
	r.setBytes(buf)
	if op <= OpWrite {
		r.off = arg
	} else {
		r.flags = int32(arg)
	}
	h := Request{rec: &r.reqRec, gen: r.gen}
	if op&1 == 0 { // OpWrite, OpSend: tried at once when none waits before it
		if f.wr.head == nil && !e.perform(f, r) {
			return h
		}
		f.wr.push(r)
	} else {
		if f.ev == nil && readsWriteOnly(fd, op) {
			e.rq.opDone(&r.reqRec, -int32(unix.EBADF), 0)
			return h
		}
		f.rd.push(r)
	}
	e.arm(f)
	return h
}

func (e *emulReqs) start(rec *reqRec) {
	r := emulOf(rec)
	r.state = stInflight
	r.fast = r.op <= OpSend && r.deadline == 0 && r.done == 0 && !r.cancelReq && !r.timedOut
	switch r.op {
	case OpFsync:
		var err error
		if r.flags == fsyncData {
			err = fdatasync(int(r.fd))
		} else {
			err = unix.Fsync(int(r.fd))
		}
		e.rq.opDone(rec, errRes(err), 0)
		return
	case OpRecvMultishot:
		if r.turn {
			e.recvTurn(r)
			return
		}
	case OpConnect:
		if r.done == 0 {
			r.done = -1 // connect(2) made; the rest waits for Write
			_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(r.fd), uintptr(unsafe.Pointer(&r.rare.sa)), uintptr(r.rare.salen))
			if errno != unix.EINPROGRESS && errno != unix.EAGAIN && errno != unix.EALREADY {
				r.done = 0
				e.rq.opDone(rec, -int32(errno), 0)
				return
			}
		}
	}
	var f *emulFd
	if fd := int(r.fd); fd < len(e.fds) && e.fds[fd] != nil {
		f = e.fds[fd]
	} else {
		f = e.fdOf(int32(fd))
	}
	if f.notPollable {
		if !e.perform(f, r) { // a regular file: at once
			return
		}
		// EAGAIN: the number is no longer a regular file's (closed with close(2), which the
		// docs allow once no request is left, and taken by a pipe or socket): wait for it.
		f.notPollable, f.nonblock = false, nonblockStream(int(r.fd))
	}
	if writeSide(r.op) || r.op == OpPoll && r.flags&unix.POLLOUT != 0 {
		if f.wr.head == nil && r.op != OpConnect && !e.perform(f, r) {
			return
		}
		f.wr.push(r)
	} else {
		if f.ev == nil && readsWriteOnly(int(r.fd), r.op) {
			e.rq.opDone(rec, -int32(unix.EBADF), 0)
			return
		}
		f.rd.push(r)
	}
	e.arm(f)
}

// readsWriteOnly reports whether op is a read or recv on an fd opened write-only (a pipe's
// write end), which readiness would never end: it completes with read(2)'s EBADF, as on uring.
// It is asked when an fd first waits (it has no fd event yet): one fcntl(2) per fd, no read
// before the loop's wait.
func readsWriteOnly(fd int, op Op) bool {
	if op != OpRead && op != OpRecv {
		return false
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_ACCMODE == unix.O_WRONLY
}

// errRes is a syscall's error as a CQE result.
func errRes(err error) int32 {
	if err == nil {
		return 0
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return -int32(errno)
	}
	return -int32(unix.EIO)
}

// want is what f's waiting requests need its fd event to watch.
func (f *emulFd) want() Flags {
	var want Flags
	if f.rd.head != nil {
		want |= Read | Error
	}
	if f.wr.head != nil {
		// Write, and an error or hang-up (a send must learn of a reset), but not the peer's
		// half-close: it raises Error on every look while the send waits for room (hangup).
		want |= Write | hangup
	}
	return want
}

// arm makes f's fd event watch what its waiting requests need.
func (e *emulReqs) arm(f *emulFd) {
	want := f.want()
	l := e.l
	if want == 0 {
		if f.counted {
			f.counted = false
			l.nfd--
		}
		if l.epfd < 0 && f.ev != nil && f.ev.flags != 0 {
			// poll and uring-poll watch by fd number: a plain close(2) of an fd without
			// requests must not leave it watched (POLLNVAL). Disarming costs them no syscall.
			f.ev.SetFlags(0)
		}
		// On epoll the flags stay: a request made soon needs no epoll_ctl (handle disarms
		// lazily), and a closed file leaves the epoll set by itself.
		return
	}
	if f.ev == nil {
		ev, err := l.AddFd(int(f.fd), 0, f.h)
		if err != nil {
			e.failAll(f, err)
			return
		}
		l.nfd-- // counted below, while requests wait
		f.ev = ev
	} else if !f.counted && l.epfd >= 0 && f.ev.flags != 0 && e.rq.cbFd != f.fd {
		// Not from a callback of this fd's own request (the steady state: a completion's
		// callback makes the fd's next request), so the number may have been closed with
		// close(2) and taken by another file since its last request: renew the registration.
		if err := e.reassert(f); err != nil {
			e.failAll(f, err)
			return
		}
	}
	if !f.counted {
		f.counted = true
		l.nfd++
	}
	if f.ev.flags&want != want {
		if err := f.ev.setFlags(f.ev.flags | want); err != nil {
			if errors.Is(err, unix.EPERM) {
				// epoll refuses regular files: run what waits at once.
				f.notPollable = true
				for r := f.rd.head; r != nil; r = f.rd.head {
					f.rd.remove(r)
					e.perform(f, r)
				}
				for r := f.wr.head; r != nil; r = f.wr.head {
					f.wr.remove(r)
					e.perform(f, r)
				}
				e.arm(f)
				return
			}
			e.failAll(f, err)
		}
	}
}

// reassert renews, on epoll, the registration that f's idle fd event kept (arm keeps it while
// no request waits): the fd may have been closed with close(2) meanwhile, which the docs allow
// once it has no request left, and its number taken by another file, which the epoll set does
// not hold; a request would then wait for ever. EPOLL_CTL_MOD with the same events confirms the
// registration (one syscall when an idle fd gets a request); on ENOENT (or EPERM: the number is
// now a regular file's, which epoll refuses whether registered or not) the slot is left
// unregistered and f's event without flags, so that arm adds the new file (with a new
// generation, so that a stale event of the old file's registration, alive in a dup, is told
// apart) or finds it not pollable (a regular file: EPERM). Errors wrap epoll_ctl's errno.
func (e *emulReqs) reassert(f *emulFd) error {
	l := e.l
	s := f.ev.slot
	if s.interest == 0 {
		f.ev.flags = 0 // flags kept from a failed registration (a regular file): arm tries again
		return nil
	}
	err := l.be.setInterest(s.fd, regGen(s), s.interest, s.interest)
	if err == nil || !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EPERM) {
		return err
	}
	s.gen, s.interest = 0, 0
	f.ev.flags = 0 // arm sets them again, adding the new file (or finding it not pollable)
	// Another file: it may block.
	f.nonblock = nonblockStream(int(f.fd))
	return nil
}

// failAll ends every request waiting on f with err's errno.
func (e *emulReqs) failAll(f *emulFd, err error) {
	res := errRes(err)
	for _, q := range []*reqList{&f.rd, &f.wr} {
		for r := q.head; r != nil; r = q.head {
			q.remove(r)
			e.rq.opDone(&r.reqRec, res, 0)
		}
	}
	if f.counted {
		f.counted = false
		e.l.nfd--
	}
}

// handle is f's fd event handler: one operation per side per call, so that one fd's requests
// take one handler turn, as an fd handler does.
func (f *emulFd) handle(ev *FdEvent, flags Flags) {
	e := f.e
	if f.rd.head == nil && f.wr.head == nil {
		ev.SetFlags(0) // nothing waits: stop watching (lazily, see arm)
		return
	}
	ran := false
	if r := f.rd.head; r != nil && flags&(Read|Error) != 0 {
		ran = true
		f.rd.remove(r)
		if e.performReady(f, r, flags) {
			f.rd.pushFront(r)
		}
	}
	if r := f.wr.head; r != nil && flags&(Write|hangup) != 0 {
		ran = true
		f.wr.remove(r)
		if e.performReady(f, r, flags) {
			f.wr.pushFront(r)
		}
	}
	if !ran {
		// Called for what no waiting request needs: flags kept from an earlier request (arm
		// keeps them, to spare an epoll_ctl per request), such as Read|Error, raised on every
		// look by a half-close while only a send waits. Watch just what is needed now.
		ev.setFlags(f.want())
		return
	}
	if f.ev != nil {
		e.arm(f)
	}
	e.l.after |= afterReq // what completed runs in this Once (Loop.afterFd)
}

// nonblockStream reports whether fd is O_NONBLOCK and neither a regular file nor a block
// device (whose I/O waits for the disk whatever the flag): its read(2) and write(2) cannot block.
// Two syscalls, once per fd number the emulation sees.
func nonblockStream(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	if m := st.Mode & unix.S_IFMT; m == unix.S_IFREG || m == unix.S_IFBLK {
		return false
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_NONBLOCK != 0
}

// sys makes a read or write syscall (a4: the offset of pread64/pwrite64). On an fd that cannot
// block (one the backend watches, a pipe, socket, ...: non-blocking, as the docs require; or
// one that was non-blocking when the emulation first saw it, such as a pipe's write end whose
// writes always complete at once and so is never watched) it goes without the runtime's
// syscall bookkeeping (internal/rawsys), as Loop.ReadNonblocking does; on a regular file, or
// on an fd not known to be non-blocking, through unix.Syscall6.
func (f *emulFd) sys(trap, a1, a2, a3, a4 uintptr) (uintptr, unix.Errno) {
	if f.raw() {
		return rawsys.Syscall6(trap, a1, a2, a3, a4, 0, 0)
	}
	n, _, errno := unix.Syscall6(trap, a1, a2, a3, a4, 0, 0)
	return n, errno
}

// raw reports whether f's fd cannot block, so that its syscalls go through internal/rawsys (see
// sys). Small enough to be inlined into perform, whose read and write make that call themselves.
func (f *emulFd) raw() bool { return (f.ev != nil || f.nonblock) && !f.notPollable }

// streamAt reports whether a Read or Write at offset off (>= 0) on fd, whose pread(2) or
// pwrite(2) failed with ESPIPE (fd cannot seek), reads or writes the stream instead, as io_uring's
// IORING_OP_READ and WRITE do: the offset of a pipe, FIFO or character device is ignored, and a
// socket takes 0 alone (another offset is ESPIPE there too). Only that failure pays its fstat(2).
func streamAt(fd int, off int64) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT != unix.S_IFSOCK || off == 0
}

// performReady is perform for r, whose fd the loop's wait found ready for flags: a Poll that
// flags answer (the side it waits for, and no error or hang-up, whose POLLERR or POLLHUP only
// poll(2) tells apart) completes with that mask, without a poll(2) of its own.
func (e *emulReqs) performReady(f *emulFd, r *emulRec, flags Flags) bool {
	if r.op == OpPoll && flags&hangup == 0 {
		if r.flags == unix.POLLIN && flags&Read != 0 || r.flags == unix.POLLOUT && flags&Write != 0 {
			e.rq.opDone(&r.reqRec, r.flags, 0)
			return false
		}
	}
	return e.perform(f, r)
}

// perform makes r's syscall. It reports true when r must wait for readiness again (EAGAIN,
// or a multishot op that goes on); otherwise it told the core (complete or opDone).
func (e *emulReqs) perform(f *emulFd, r *emulRec) bool {
	rq := e.rq
	fd := uintptr(r.fd)
	var n uintptr
	var errno unix.Errno
	switch r.op {
	case OpRead:
		p := r.bytes()
		if r.off < 0 && f.raw() {
			n, errno = rawsys.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		} else if r.off < 0 {
			n, errno = f.sys(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0)
		} else {
			n, errno = f.sys(sysPread, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(r.off))
			if errno == unix.ESPIPE && streamAt(int(r.fd), r.off) {
				n, errno = f.sys(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0)
			}
		}
	case OpWrite, OpSend:
		// The emulation finishes a short write itself (the core's continuation would queue
		// the rest behind later requests): until all is written, EAGAIN, or an error.
		for {
			p := r.bytes()[r.done:]
			switch {
			case r.op == OpSend:
				n, errno = rawsys.Syscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(r.flags|unix.MSG_DONTWAIT), 0, 0)
			case r.off < 0 && f.raw():
				n, errno = rawsys.Syscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
			case r.off < 0:
				n, errno = f.sys(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0)
			default:
				n, errno = f.sys(sysPwrite, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(r.off+int64(r.done)))
				if errno == unix.ESPIPE && streamAt(int(r.fd), r.off) {
					n, errno = f.sys(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0)
				}
			}
			if errno != 0 || n == 0 || int(n) == len(p) {
				break
			}
			r.done += int32(n)
		}
	case OpRecv:
		n, errno = rawsys.Syscall6(unix.SYS_RECVFROM, fd, uintptr(r.bp), uintptr(r.blen), uintptr(r.flags|unix.MSG_DONTWAIT), 0, 0)
	case OpRecvMsg, OpSendMsg:
		trap := uintptr(unix.SYS_RECVMSG)
		if r.op == OpSendMsg {
			trap = unix.SYS_SENDMSG
		}
		n, errno = rawsys.Syscall(trap, fd, uintptr(unsafe.Pointer(r.rare.msg)), uintptr(r.flags|unix.MSG_DONTWAIT))
	case OpPoll:
		n, errno = e.pollNow(int(r.fd), r.flags)
	case OpAccept, OpAcceptMultishot:
		n, _, errno = unix.Syscall6(sysAccept4, fd, 0, 0, uintptr(r.flags), 0, 0)
		if errno == 0 && r.op == OpAcceptMultishot {
			rq.complete(&r.reqRec, int32(n), 0)
			return true
		}
	case OpConnect:
		v, err := unix.GetsockoptInt(int(r.fd), unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			errno = err.(unix.Errno)
		} else {
			errno = unix.Errno(v)
		}
		r.done = 0
	case OpRecvMultishot:
		g := emulGroupOf(r.grp())
		if len(g.free) == 0 {
			rq.opDone(&r.reqRec, -int32(unix.ENOBUFS), 0)
			return false
		}
		bid := g.free[len(g.free)-1]
		p := g.buf(int(bid), g.size)
		n, errno = rawsys.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(r.flags|unix.MSG_DONTWAIT), 0, 0)
		switch {
		case errno == unix.EAGAIN:
			return true
		case errno == 0 && n > 0:
			g.free = g.free[:len(g.free)-1]
			rq.complete(&r.reqRec, int32(n), compBuffer|uint32(bid)<<compBufShift)
			return true
		}
	default:
		errno = unix.EOPNOTSUPP
	}
	if errno == unix.EAGAIN || errno == unix.EINTR {
		return true
	}
	res := int32(n)
	if errno != 0 {
		res = -int32(errno)
	}
	if r.fast && r.done == 0 && (r.op&1 != 0 || res < 0 || int(res) == int(r.blen)) {
		rq.finishFast(&r.reqRec, res) // what opDone would do, as the ring's steady case does
	} else {
		rq.opDone(&r.reqRec, res, 0)
	}
	return false
}

// recvTurn makes r's turn (BufferGroup.pump) at once: one receive into one free buffer of its
// group, with MSG_DONTWAIT, its result to opDone (ENOBUFS without a free buffer, EAGAIN without
// data).
func (e *emulReqs) recvTurn(r *emulRec) {
	g := emulGroupOf(r.grp())
	if len(g.free) == 0 {
		e.rq.opDone(&r.reqRec, -int32(unix.ENOBUFS), 0)
		return
	}
	bid := g.free[len(g.free)-1]
	p := g.buf(int(bid), g.size)
	n, errno := rawsys.Syscall6(unix.SYS_RECVFROM, uintptr(r.fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(r.flags|unix.MSG_DONTWAIT), 0, 0)
	switch {
	case errno == unix.EINTR:
		e.rq.opDone(&r.reqRec, -int32(unix.EAGAIN), 0) // wait for data as a multishot
	case errno != 0:
		e.rq.opDone(&r.reqRec, -int32(errno), 0)
	case n > 0:
		g.free = g.free[:len(g.free)-1]
		e.rq.opDone(&r.reqRec, int32(n), compBuffer|uint32(bid)<<compBufShift)
	default:
		e.rq.opDone(&r.reqRec, 0, 0) // end of file
	}
}

// retime: the emulation's deadlines are the loop's timers.
func (e *emulReqs) retime(*reqRec, time.Duration) bool { return false }

func (e *emulReqs) check(Op) error { return nil }

func (e *emulReqs) cancel(rec *reqRec) {
	if r := emulOf(rec); r.qlist != nil {
		r.qlist.remove(r)
	}
	e.rq.opDone(rec, -int32(unix.ECANCELED), 0)
}

func (e *emulReqs) cancelFd(fd int32) {
	if int(fd) >= len(e.fds) || e.fds[fd] == nil {
		return
	}
	f := e.fds[fd]
	if f.ev != nil {
		if !f.counted {
			e.l.nfd++ // FdEvent.Close uncounts it
		}
		f.ev.Close()
		f.ev, f.counted = nil, false
	}
	f.notPollable = false
	for _, q := range []*reqList{&f.rd, &f.wr} {
		for r := q.head; r != nil; r = q.head {
			q.remove(r)
			r.cancelReq = true
			r.slow()
			e.rq.opDone(&r.reqRec, -int32(unix.ECANCELED), 0)
		}
	}
}

func (e *emulReqs) needWait() bool { return false }

// runBatch is reqDriving's: a batch of completions (runTurn's), the queued ones.
func (e *emulReqs) runBatch(n int) bool {
	rq := e.rq
	rq.turn++
	ran := rq.runQueued(n)
	rq.settle()
	return ran
}

// turn is reqDriving's: the emulation has no request turn (Loop.turner is nil).
func (e *emulReqs) turn(*Loop) turnEnd { return turnNone }

func (e *emulReqs) newGroup(bgid uint16, n, size int) (*BufferGroup, error) {
	eg := new(emulGroup)
	e.l.initGroup(&eg.BufferGroup, bgid, n, size)
	eg.free = make([]uint16, n)
	for i := range eg.free {
		eg.free[i] = uint16(n - 1 - i)
	}
	return &eg.BufferGroup, nil
}

func (e *emulReqs) provide(g *BufferGroup, bid int) {
	eg := emulGroupOf(g)
	eg.free = append(eg.free, uint16(bid))
}

func (e *emulReqs) closeGroup(g *BufferGroup) error { return nil }

func (e *emulReqs) shutdown() {}

func (e *emulReqs) fixFile(fd int32, on, live bool) (bool, error) { return false, nil }
