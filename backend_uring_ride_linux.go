package ringev

// The uring backend's side of a handler's ride (rider, ride.go): Loop.ReadNonblocking and
// WriteNonblocking's I/O as an SQE with the backend's look (its IORING_OP_EPOLL_WAIT) behind
// it, in one io_uring_enter(2). The core decides when an I/O may ride; the SQEs and CQEs are the
// backend's.

import (
	"unsafe"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

func (b *uringBackend) rideShared() *rideState {
	b.events = b.ringEvents
	return &b.rideState
}

// ride is rider.ride: an IORING_OP_READ or IORING_OP_WRITE (5.6) of p on fd at the file
// position (off -1, as read(2) and write(2)) with RWF_NOWAIT (preadv2(2), 4.14: the ring ignores
// O_NONBLOCK on pollable files and would wait for data or room; with it the I/O completes at
// once, or fails with EAGAIN, or with EOPNOTSUPP on a file that cannot say), followed by the
// EPOLL_WAIT on the set when none is in flight, in one io_uring_enter(2) that does not wait: the
// kernel issues the SQEs in order and completes both at once. An I/O the kernel still did not
// finish is waited for in the kernel, with the runtime's syscall bookkeeping, until its CQE. A
// full SQ gives -EOPNOTSUPP (read(2) or write(2) then).
func (b *uringBackend) ride(trap uintptr, fd int, p []byte) (int32, error) {
	r := b.entering() // its enter submits the requests prepared before this I/O too
	s := r.GetSQE()
	if s == nil {
		return -int32(unix.EOPNOTSUPP), nil
	}
	// p is the kernel's during the enter below: storing it in the backend moves it to the heap
	// (a goroutine stack can move; the heap does not) and keeps it alive until the next I/O.
	b.ioBuf = p
	b.ioTag++
	tag := b.ioTag
	opcode := uring.OpRead
	if trap == unix.SYS_WRITE {
		opcode = uring.OpWrite
	}
	*s = uring.SQE{Opcode: opcode, Fd: int32(fd), Off: ^uint64(0), Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p)))),
		Len: uint32(len(p)), OpFlags: unix.RWF_NOWAIT, UserData: tag}
	if e := r.GetSQE(); e != nil {
		*e = b.epollSQE
		b.inflight = true
	}
	if _, err := r.Submit(); err != nil {
		// An io_uring_enter that fails consumes no SQE: make the I/O a NOP before any later
		// enter submits it (an EPOLL_WAIT stays queued and in flight).
		s.PrepNop()
		s.SetUserData(tag)
		return 0, err
	}
	// The CQEs, read in place: the I/O's result, how many fds a completed EPOLL_WAIT found
	// (rideState.found; they are in rideState.events), a request's (to the requests' driver); others are those of SQEs whose
	// caller has gone (an error): ignored. A failed EPOLL_WAIT just ends: the next blocking
	// wait makes a new one and sees the error itself. (One loop, in this function: a call per
	// ride would cost the busy path.)
	var res int32
	for {
		done := false
		from, tail := b.cqUnread()
		for p := from; p != tail; p++ {
			c := r.CQEAtPos(p)
			switch c.UserData {
			case tag:
				res, done = c.Res, true
			case uringEpollTag:
				b.inflight = false
				b.found = max(c.Res, 0)
			default:
				if c.UserData&reqTag != 0 {
					b.reqs.readCQE(c, p) // a request's
				}
			}
		}
		b.cqRead(tail)
		if done {
			return res, nil
		}
		if _, err := b.entering().SubmitAndWait(1); err != nil {
			b.pinned = append(b.pinned, p) // the kernel still has p: keep it until the ring closes
			return 0, err
		}
	}
}

// cqUnread returns the positions of the CQEs that came since the last read: from (the CQ's head
// when no request was made yet, which holds none) to tail.
func (b *uringBackend) cqUnread() (from, tail uint32) {
	if b.reqs != nil {
		return b.reqs.unread(), b.ring.CQTail()
	}
	return b.ring.CQHead(), b.ring.CQTail()
}

// cqRead marks the CQEs before position tail read (ringUser.read), or gives them all back when
// no request was made yet.
func (b *uringBackend) cqRead(tail uint32) {
	if b.reqs != nil {
		b.reqs.read(b.ring, tail)
		return
	}
	b.ring.CQSetHead(tail)
}
