package ringev

// The uring backend's side of a handler's ride (rider, ride.go): Loop.ReadNonblocking and
// WriteNonblocking's I/O as an SQE with the backend's look (its IORING_OP_EPOLL_WAIT) behind
// it, in one io_uring_enter(2), and the start calibration that times it against
// read(2)+epoll_wait(2). The core decides when an I/O may ride and which path is cheaper; the
// SQEs and CQEs are the backend's.

import (
	"errors"
	"fmt"
	"math"
	"time"
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
func (b *uringBackend) ride(op Op, fd int, p []byte) (int32, error) {
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
	if op == OpWrite {
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
		n := r.CQReady()
		for i := uint32(0); i < n; i++ {
			c := r.CQEAt(i)
			switch c.UserData {
			case tag:
				res, done = c.Res, true
			case uringEpollTag:
				b.inflight = false
				b.found = max(c.Res, 0)
			default:
				if c.UserData&reqTag != 0 {
					b.reqs.cqe(c) // a request's (backend_uring_req_linux.go)
				}
			}
		}
		r.CQAdvance(n)
		if done {
			return res, nil
		}
		if _, err := b.entering().SubmitAndWait(1); err != nil {
			b.pinned = append(b.pinned, p) // the kernel still has p: keep it until the ring closes
			return 0, err
		}
	}
}

// Calibration: rideCalBatches batches of rideCalBatch reads on each path, alternating; short
// batches, so that some are not interrupted (the fastest counts).
const (
	rideCalBatch   = 4
	rideCalBatches = 8
)

// calibrateRide times, on a scratch pipe holding enough bytes and a scratch epoll set watching
// its read end, a one-byte read followed by a look at the set, made as read(2)+epoll_wait(2)
// and as an IORING_OP_READ (RWF_NOWAIT) and an IORING_OP_EPOLL_WAIT in one io_uring_enter(2)
// on b's ring, as rideIO makes it. It returns the ns per read and look of the fastest batch of
// each (wall time, in batches short enough that most are not interrupted). The ring's SQEs and
// CQEs are all consumed when it returns, or, on a timeout, the buffers they name stay pinned.
// Errors: the scratch fds' syscalls, the ring's, an op the kernel lacks (the EPOLL_WAIT's
// EINVAL before Linux 6.15).
func (b *uringBackend) calibrateRide() (sysNs, ringNs float64, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return 0, 0, fmt.Errorf("pipe2: %w", err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, 0, fmt.Errorf("epoll_create1: %w", err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, p[0], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p[0])}); err != nil {
		return 0, 0, fmt.Errorf("epoll_ctl: %w", err)
	}
	// One byte per read, and one more so that every look finds the pipe readable (an
	// EPOLL_WAIT that found nothing would stay in the kernel).
	fill := make([]byte, 2*rideCalBatch*rideCalBatches+1)
	if _, err := unix.Write(p[1], fill); err != nil {
		return 0, 0, fmt.Errorf("write: %w", err)
	}
	buf := make([]byte, 1)
	events := make([]unix.EpollEvent, 4)
	sysNs, ringNs = math.Inf(1), math.Inf(1)
	for range rideCalBatches {
		t0 := time.Now()
		for range rideCalBatch {
			if _, err := rawIO(unix.SYS_READ, p[0], buf); err != nil {
				return 0, 0, fmt.Errorf("read: %w", err)
			}
			if _, err := epollLook(ep, events[:0]); err != nil {
				return 0, 0, err
			}
		}
		sysNs = min(sysNs, float64(time.Since(t0).Nanoseconds())/rideCalBatch)
		t0 = time.Now()
		for range rideCalBatch {
			if err := b.calRide(p[0], ep, buf, events); err != nil {
				return 0, 0, err
			}
		}
		ringNs = min(ringNs, float64(time.Since(t0).Nanoseconds())/rideCalBatch)
	}
	return sysNs, ringNs, nil
}

// calRide is one read of buf from fd with a look at ep through the ring (calibrateRide).
func (b *uringBackend) calRide(fd, ep int, buf []byte, events []unix.EpollEvent) error {
	r := b.entering()
	s, e := r.GetSQE(), r.GetSQE()
	if s == nil || e == nil {
		return errors.New("the ring's SQ is full")
	}
	b.ioTag++
	readTag := b.ioTag
	b.ioTag++
	lookTag := b.ioTag // not uringEpollTag: ride must not take this look for the loop's
	*s = uring.SQE{Opcode: uring.OpRead, Fd: int32(fd), Off: ^uint64(0), Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))),
		Len: uint32(len(buf)), OpFlags: unix.RWF_NOWAIT, UserData: readTag}
	e.PrepEpollWait(ep, events, 0)
	e.SetUserData(lookTag)
	if _, err := r.Submit(); err != nil {
		s.PrepNop() // a failed enter consumed nothing: make both harmless
		e.PrepNop()
		return err
	}
	got := 0
	deadline := time.Now().Add(100 * time.Millisecond)
	for {
		n := r.CQReady()
		for i := uint32(0); i < n; i++ {
			c := r.CQEAt(i)
			if c.UserData != readTag && c.UserData != lookTag {
				continue
			}
			got++
			if c.Res < 0 {
				r.CQAdvance(n)
				what := "IORING_OP_READ"
				if c.UserData == lookTag {
					what = "IORING_OP_EPOLL_WAIT (Linux 6.15)"
				}
				if got < 2 {
					b.calPinned = append(b.calPinned, buf, events) // the other may still be in flight
				}
				return fmt.Errorf("%s: %w", what, unix.Errno(-c.Res))
			}
		}
		r.CQAdvance(n)
		if got == 2 {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			b.calPinned = append(b.calPinned, buf, events)
			return errors.New("the ring's read and look did not complete within 100 ms")
		}
		if _, err := b.entering().SubmitAndWaitTimeout(1, left); err != nil && !errors.Is(err, unix.ETIME) && !errors.Is(err, unix.EINTR) {
			b.calPinned = append(b.calPinned, buf, events)
			return err
		}
	}
}
