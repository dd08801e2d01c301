//go:build linux

package uring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Every Prep method resets the whole SQE (user data included), so call it
// first and SetUserData / SetFlags after it. Methods are in kernel opcode order.

// prepRW fills the fields shared by most opcodes and zeroes the rest.
func (s *SQE) prepRW(op uint8, fd int, addr uint64, length uint32, off uint64) {
	*s = SQE{Opcode: op, Fd: int32(fd), Addr: addr, Len: length, Off: off}
}

// PrepNop prepares IORING_OP_NOP (5.1): completes at once with Res 0.
func (s *SQE) PrepNop() {
	s.prepRW(OpNop, -1, 0, 0, 0)
}

// PrepPollAdd prepares a one-shot IORING_OP_POLL_ADD (5.1) on fd. mask is a
// poll(2) event mask (unix.POLLIN, unix.POLLOUT, ...; 32 bits since
// IORING_FEAT_POLL_32BITS, 5.9). The CQE's Res is the ready mask, or -errno.
// A pending poll holds a reference to the file: closing fd does not release
// it until the poll completes or is cancelled.
func (s *SQE) PrepPollAdd(fd int, mask uint32) {
	s.prepRW(OpPollAdd, fd, 0, 0, 0)
	s.OpFlags = pollMask(mask)
}

// PrepPollMultishot prepares a multishot poll (IORING_POLL_ADD_MULTI, 5.13):
// one CQE per readiness edge, each with CQEFMore while the poll stays armed.
// It is edge-triggered; the kernel may end it at any time (a CQE without
// CQEFMore), after which it must be re-armed.
func (s *SQE) PrepPollMultishot(fd int, mask uint32) {
	s.PrepPollAdd(fd, mask)
	s.Len = PollAddMulti
}

// PrepPollRemove prepares IORING_OP_POLL_REMOVE (5.1) of the pending poll
// whose SQE.UserData is target. The poll completes with -ECANCELED; this
// request's Res is 0, or -ENOENT if no such poll is pending (-EALREADY if it
// is completing).
func (s *SQE) PrepPollRemove(target uint64) {
	s.prepRW(OpPollRemove, -1, target, 0, 0)
}

// PrepCancel prepares IORING_OP_ASYNC_CANCEL (5.5) of the request whose
// SQE.UserData is target. flags are AsyncCancel* (AsyncCancelAll, 5.19, ...).
// Res is 0 (or the number cancelled with AsyncCancelAll), -ENOENT or
// -EALREADY.
func (s *SQE) PrepCancel(target uint64, flags uint32) {
	s.prepRW(OpAsyncCancel, -1, target, 0, 0)
	s.OpFlags = flags
}

// PrepCancelFd prepares IORING_OP_ASYNC_CANCEL keyed on the file descriptor
// (IORING_ASYNC_CANCEL_FD, 5.19): it cancels a request on fd, or all of them
// with AsyncCancelAll.
func (s *SQE) PrepCancelFd(fd int, flags uint32) {
	s.prepRW(OpAsyncCancel, fd, 0, 0, 0)
	s.OpFlags = flags | AsyncCancelFd
}

// escapeEvents is called through a variable, so the compiler cannot see that
// it does nothing: the events slices passed to PrepEpollWait escape to the
// heap, and the kernel never writes into a goroutine stack that may move.
var escapeEvents = func([]unix.EpollEvent) {}

// PrepEpollWait prepares IORING_OP_EPOLL_WAIT (6.15): an epoll_wait(2) on
// epfd, completing when events are ready. Res is the number of events written
// to events, or -errno (-EINVAL from kernels without the op). flags are
// reserved (0). events must stay reachable and unchanged until the CQE
// arrives; it must not be empty.
func (s *SQE) PrepEpollWait(epfd int, events []unix.EpollEvent, flags uint32) {
	escapeEvents(events)
	var addr uint64
	if len(events) > 0 {
		addr = uint64(uintptr(unsafe.Pointer(&events[0])))
	}
	s.prepRW(OpEpollWait, epfd, addr, uint32(len(events)), 0)
	s.OpFlags = flags
}

// SetUserData sets the value passed back in CQE.UserData.
func (s *SQE) SetUserData(u uint64) { s.UserData = u }

// SetFlags sets the IOSQE_* flags (SQEIOLink, SQEAsync, ...).
func (s *SQE) SetFlags(f uint8) { s.Flags = f }

// bigEndian is true on big-endian machines, where the kernel expects the two
// 16-bit halves of poll32_events swapped (liburing's __io_uring_prep_poll_mask).
var bigEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}()

func pollMask(mask uint32) uint32 {
	if bigEndian {
		return mask<<16 | mask>>16
	}
	return mask
}
