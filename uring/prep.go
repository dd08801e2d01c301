//go:build linux

package uring

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Every Prep method resets the whole SQE (user data and flags included), so
// call it first and SetUserData / SetFlags after it (see SQE). Methods are in kernel
// opcode order; each names its opcode constant, so Probe.OpSupported can be
// asked about exactly the op a method prepares. Semantics follow
// io_uring_enter(2) and the liburing io_uring_prep_*(3) man pages.
//
// Memory passed to a Prep method (buffers, iovecs, timespecs, sockaddrs,
// paths, statx and epoll structs) is addressed by the kernel: it must stay
// reachable and unchanged until the request's CQE is reaped (see the package
// documentation). The methods force it to the heap so that a moving
// goroutine stack never holds it.

// escape is called through a variable so the compiler cannot prove it does
// nothing: whatever is passed to it escapes to the heap.
var escape = func(unsafe.Pointer) {}

// addr returns the address of p as an SQE address field, forcing *p to the
// heap. nil gives 0.
func addr[T any](p *T) uint64 {
	if p == nil {
		return 0
	}
	escape(unsafe.Pointer(p))
	return uint64(uintptr(unsafe.Pointer(p)))
}

// sliceAddr is addr for the first element of a slice; empty gives 0.
func sliceAddr[T any](s []T) uint64 {
	if len(s) == 0 {
		return 0
	}
	return addr(&s[0])
}

// MaxRW is the most bytes one read, write, send or recv moves (the kernel's MAX_RW_COUNT:
// INT_MAX rounded down to a 4 KiB page); a longer buffer is a short transfer of MaxRW.
const MaxRW = 0x7ffff000

// RWLen is an SQE's Len for a buffer of n bytes: n, at most MaxRW, so that a buffer of 4 GiB
// or more is not cut to the low 32 bits of its length (4 GiB would be 0: a false end of file).
func RWLen(n int) uint32 { return uint32(min(n, MaxRW)) }

// bytesAddr is sliceAddr for a byte slice, the buffer of the read, write, send and recv
// methods: not generic, so that it is inlined on their hot path.
func bytesAddr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	escape(p)
	return uint64(uintptr(p))
}

// prepRW fills the fields shared by most opcodes and zeroes the rest.
func (s *SQE) prepRW(op uint8, fd int, addr uint64, length uint32, off uint64) {
	*s = SQE{Opcode: op, Fd: int32(fd), Addr: addr, Len: length, Off: off}
}

// PrepNop prepares IORING_OP_NOP (5.1): completes at once with Res 0.
func (s *SQE) PrepNop() {
	s.prepRW(OpNop, -1, 0, 0, 0)
}

// PrepReadv prepares IORING_OP_READV (5.1), preadv2(2) on fd into iovs at
// offset off (-1 or ^uint64(0): the file position, IORING_FEAT_RW_CUR_POS).
// Res is the number of bytes read or -errno. iovs and the buffers they point
// at must stay reachable until the CQE.
func (s *SQE) PrepReadv(fd int, iovs []unix.Iovec, off uint64) {
	s.prepRW(OpReadv, fd, sliceAddr(iovs), uint32(len(iovs)), off)
}

// PrepWritev prepares IORING_OP_WRITEV (5.1), pwritev2(2); see PrepReadv.
func (s *SQE) PrepWritev(fd int, iovs []unix.Iovec, off uint64) {
	s.prepRW(OpWritev, fd, sliceAddr(iovs), uint32(len(iovs)), off)
}

// PrepFsync prepares IORING_OP_FSYNC (5.1) of fd; flags is 0 or
// FsyncDatasync. Res is 0 or -errno.
func (s *SQE) PrepFsync(fd int, flags uint32) {
	s.prepRW(OpFsync, fd, 0, 0, 0)
	s.OpFlags = flags
}

// PrepReadFixed prepares IORING_OP_READ_FIXED (5.1): a read into buf, which
// must lie inside the registered buffer bufIndex (Ring.RegisterBuffers).
// Res is the number of bytes read or -errno (-EFAULT outside the buffer).
func (s *SQE) PrepReadFixed(fd int, buf []byte, off uint64, bufIndex uint16) {
	s.prepRW(OpReadFixed, fd, bytesAddr(buf), RWLen(len(buf)), off)
	s.BufIndex = bufIndex
}

// PrepWriteFixed prepares IORING_OP_WRITE_FIXED (5.1); see PrepReadFixed.
func (s *SQE) PrepWriteFixed(fd int, buf []byte, off uint64, bufIndex uint16) {
	s.prepRW(OpWriteFixed, fd, bytesAddr(buf), RWLen(len(buf)), off)
	s.BufIndex = bufIndex
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

// PrepPollUpdate prepares IORING_OP_POLL_REMOVE with update flags (5.13): the
// pending poll whose user_data is oldUserData gets the event mask mask (with
// PollUpdateEvents in flags) and the user_data newUserData (with
// PollUpdateUserData), and stays or becomes multishot with PollAddMulti. Res
// is 0, or -ENOENT when no such poll is pending.
func (s *SQE) PrepPollUpdate(oldUserData, newUserData uint64, mask, flags uint32) {
	s.prepRW(OpPollRemove, -1, oldUserData, flags, newUserData)
	s.OpFlags = pollMask(mask)
}

// PrepTimeout prepares IORING_OP_TIMEOUT (5.4): it completes with -ETIME when
// ts passes (relative, or absolute with TimeoutAbs, on CLOCK_MONOTONIC unless
// TimeoutBoottime or TimeoutRealtime), or with Res 0 as soon as count other
// CQEs have been posted (count 0: time only). With TimeoutMultishot (6.4) it
// fires count times (0: until removed), each CQE but the last with
// CQEFMore. The kernel reads ts at submission. The ring notes the request
// when it submits it, so that its end ends a wait (see Ring.SubmitAndWait).
func (s *SQE) PrepTimeout(ts *Timespec, count uint32, flags uint32) {
	if !timeoutPrepared.Load() {
		timeoutPrepared.Store(true)
	}
	s.prepRW(OpTimeout, -1, addr(ts), 1, uint64(count))
	s.OpFlags = flags
}

// PrepTimeoutRemove prepares IORING_OP_TIMEOUT_REMOVE (5.5) of the timeout
// whose user_data is target: it completes with -ECANCELED, this request with
// Res 0, -ENOENT (no such timeout) or -EALREADY (already firing).
func (s *SQE) PrepTimeoutRemove(target uint64, flags uint32) {
	s.prepRW(OpTimeoutRemove, -1, target, 0, 0)
	s.OpFlags = flags
}

// PrepTimeoutUpdate prepares IORING_OP_TIMEOUT_REMOVE with
// IORING_TIMEOUT_UPDATE (5.11): the timeout whose user_data is target is
// re-armed with ts (flags as in PrepTimeout, e.g. TimeoutAbs; add
// LinkTimeoutUpdate, 5.15, for a LINK_TIMEOUT). Res is 0 or -ENOENT.
func (s *SQE) PrepTimeoutUpdate(ts *Timespec, target uint64, flags uint32) {
	s.prepRW(OpTimeoutRemove, -1, target, 0, addr(ts))
	s.OpFlags = flags | TimeoutUpdate
}

// PrepAccept prepares IORING_OP_ACCEPT (5.5), accept4(2) on the listening
// socket fd. sa and salen (may both be nil) receive the peer address; *salen
// must hold the size of *sa. flags are accept4 flags (unix.SOCK_CLOEXEC,
// ...). Res is the new fd or -errno.
func (s *SQE) PrepAccept(fd int, sa *unix.RawSockaddrAny, salen *uint32, flags int) {
	s.prepRW(OpAccept, fd, addr(sa), 0, addr(salen))
	s.OpFlags = uint32(flags)
}

// PrepAcceptMultishot prepares a multishot accept (IORING_ACCEPT_MULTISHOT,
// 5.19): one CQE per connection, each with CQEFMore while it stays armed. No
// peer address is returned (one sockaddr cannot serve several CQEs).
func (s *SQE) PrepAcceptMultishot(fd int, flags int) {
	s.PrepAccept(fd, nil, nil, flags)
	s.Ioprio |= AcceptMultishot
}

// PrepCancel prepares IORING_OP_ASYNC_CANCEL (5.5) of the request whose
// SQE.UserData is target. flags are AsyncCancel* (AsyncCancelAll to cancel
// every match, 5.19; AsyncCancelAny with target 0 to cancel any request).
// Res is 0 (or the number cancelled with AsyncCancelAll or AsyncCancelAny),
// -ENOENT or -EALREADY.
func (s *SQE) PrepCancel(target uint64, flags uint32) {
	s.prepRW(OpAsyncCancel, -1, target, 0, 0)
	s.OpFlags = flags
}

// PrepCancelFd prepares IORING_OP_ASYNC_CANCEL keyed on the file descriptor
// (IORING_ASYNC_CANCEL_FD, 5.19): it cancels a request on fd, or all of them
// with AsyncCancelAll (Res is then the count).
func (s *SQE) PrepCancelFd(fd int, flags uint32) {
	s.prepRW(OpAsyncCancel, fd, 0, 0, 0)
	s.OpFlags = flags | AsyncCancelFd
}

// PrepLinkTimeout prepares IORING_OP_LINK_TIMEOUT (5.5): it must directly
// follow an SQE with SQEIOLink and cancels that request if ts (relative, or
// absolute with TimeoutAbs) passes first; it then completes with -ETIME and
// the request with -ECANCELED; otherwise it completes with -ECANCELED
// itself. The kernel reads ts at submission.
func (s *SQE) PrepLinkTimeout(ts *Timespec, flags uint32) {
	s.prepRW(OpLinkTimeout, -1, addr(ts), 1, 0)
	s.OpFlags = flags
}

// PrepConnect prepares IORING_OP_CONNECT (5.5), connect(2) of socket fd to
// the address sa of salen bytes. Res is 0 or -errno.
func (s *SQE) PrepConnect(fd int, sa unsafe.Pointer, salen uint32) {
	escape(sa)
	s.prepRW(OpConnect, fd, uint64(uintptr(sa)), 0, uint64(salen))
}

// PrepOpenat prepares IORING_OP_OPENAT (5.6), openat(2) of the NUL-terminated
// path (unix.BytePtrFromString) relative to dirfd (unix.AT_FDCWD). Res is
// the new fd or -errno.
func (s *SQE) PrepOpenat(dirfd int, path *byte, flags int, mode uint32) {
	s.prepRW(OpOpenat, dirfd, addr(path), mode, 0)
	s.OpFlags = uint32(flags)
}

// PrepClose prepares IORING_OP_CLOSE (5.6) of fd. Res is 0 or -errno.
func (s *SQE) PrepClose(fd int) {
	s.prepRW(OpClose, fd, 0, 0, 0)
}

// PrepCloseDirect prepares IORING_OP_CLOSE of fixed-file slot (5.15).
func (s *SQE) PrepCloseDirect(slot uint32) {
	s.prepRW(OpClose, 0, 0, 0, 0)
	s.SpliceFdIn = int32(slot + 1)
}

// PrepStatx prepares IORING_OP_STATX (5.6), statx(2) of path relative to
// dirfd into st. mask is unix.STATX_*; flags are unix.AT_*. Res is 0 or
// -errno.
func (s *SQE) PrepStatx(dirfd int, path *byte, flags int, mask uint32, st *unix.Statx_t) {
	s.prepRW(OpStatx, dirfd, addr(path), mask, addr(st))
	s.OpFlags = uint32(flags)
}

// PrepRead prepares IORING_OP_READ (5.6), pread(2) of fd into buf at off
// (^uint64(0): the file position). Res is the number of bytes or -errno.
func (s *SQE) PrepRead(fd int, buf []byte, off uint64) {
	s.prepRW(OpRead, fd, bytesAddr(buf), RWLen(len(buf)), off)
}

// PrepWrite prepares IORING_OP_WRITE (5.6), pwrite(2); see PrepRead.
func (s *SQE) PrepWrite(fd int, buf []byte, off uint64) {
	s.prepRW(OpWrite, fd, bytesAddr(buf), RWLen(len(buf)), off)
}

// PrepSend prepares IORING_OP_SEND (5.6), send(2) of buf on socket fd with
// msg flags (unix.MSG_*). Res is the number of bytes or -errno.
func (s *SQE) PrepSend(fd int, buf []byte, flags int) {
	s.prepRW(OpSend, fd, bytesAddr(buf), RWLen(len(buf)), 0)
	s.OpFlags = uint32(flags)
}

// PrepRecv prepares IORING_OP_RECV (5.6), recv(2) into buf from socket fd
// with msg flags. Res is the number of bytes (0 at EOF) or -errno.
func (s *SQE) PrepRecv(fd int, buf []byte, flags int) {
	s.prepRW(OpRecv, fd, bytesAddr(buf), RWLen(len(buf)), 0)
	s.OpFlags = uint32(flags)
}

// PrepRecvMultishot prepares a multishot IORING_OP_RECV (IORING_RECV_MULTISHOT,
// 6.0) that takes a buffer from provided-buffer group bgid (SQEBufferSelect,
// see Ring.SetupBufRing) for each CQE: Res is the byte count, CQE.BufferID
// the buffer, and CQEFMore says it stays armed. When the group runs dry it
// ends with Res -ENOBUFS and no CQEFMore: give buffers back and re-arm.
func (s *SQE) PrepRecvMultishot(fd int, bgid uint16, flags int) {
	s.prepRW(OpRecv, fd, 0, 0, 0)
	s.OpFlags = uint32(flags)
	s.Ioprio = RecvMultishot
	s.Flags = SQEBufferSelect
	s.BufIndex = bgid
}

// PrepEpollCtl prepares IORING_OP_EPOLL_CTL (5.6), epoll_ctl(2) of op
// (unix.EPOLL_CTL_*) for fd on epfd with ev. Res is 0 or -errno.
func (s *SQE) PrepEpollCtl(epfd, fd, op int, ev *unix.EpollEvent) {
	s.prepRW(OpEpollCtl, epfd, addr(ev), uint32(op), uint64(fd))
}

// PrepSplice prepares IORING_OP_SPLICE (5.7), splice(2) of up to n bytes from fdIn at offIn
// to fdOut at offOut (io_uring_prep_splice(3)); one of the two must be a pipe. An offset of
// SpliceNoOffset is the file position (a pipe or socket has none: pass SpliceNoOffset for
// it). flags are splice(2)'s (unix.SPLICE_F_MOVE, unix.SPLICE_F_NONBLOCK, ...), plus
// SpliceFdInFixed when fdIn is a registered file's index (SQEFixedFile says it of fdOut). Res
// is the number of bytes moved, 0 at fdIn's end of file, or -errno (-EAGAIN from a
// non-blocking file or with SPLICE_F_NONBLOCK when nothing can move now: the kernel runs every
// splice in its io-wq thread pool and does not wait for readiness then).
func (s *SQE) PrepSplice(fdIn int, offIn int64, fdOut int, offOut int64, n uint32, flags uint32) {
	s.prepRW(OpSplice, fdOut, uint64(offIn), n, uint64(offOut))
	s.SpliceFdIn = int32(fdIn)
	s.OpFlags = flags
}

// SpliceNoOffset is PrepSplice's offset for a file without one (a pipe, a socket), or to use
// the file position: -1, as the kernel reads it.
const SpliceNoOffset int64 = -1

// SpliceFdInFixed is PrepSplice's flag that makes fdIn an index into the ring's registered
// files (SPLICE_F_FD_IN_FIXED).
const SpliceFdInFixed uint32 = 1 << 31

// PrepShutdown prepares IORING_OP_SHUTDOWN (5.11), shutdown(2) of socket fd
// with how (unix.SHUT_RD, SHUT_WR, SHUT_RDWR). Res is 0 or -errno.
func (s *SQE) PrepShutdown(fd, how int) {
	s.prepRW(OpShutdown, fd, 0, uint32(how), 0)
}

// PrepMsgRing prepares IORING_OP_MSG_RING with IORING_MSG_DATA (5.18): the
// ring whose fd is ringFd gets a CQE with Res res and UserData userData
// (and, with MsgRingFlagsPass in flags, 6.3, CQE flags cqeFlags). This
// request's Res is 0 or -errno (-EBADFD if ringFd is not a ring,
// -EOVERFLOW if its CQ is full).
func (s *SQE) PrepMsgRing(ringFd int, res uint32, userData uint64, flags, cqeFlags uint32) {
	s.prepRW(OpMsgRing, ringFd, MsgData, res, userData)
	s.OpFlags = flags
	s.SpliceFdIn = int32(cqeFlags)
}

// PrepEpollWait prepares IORING_OP_EPOLL_WAIT (6.15): an epoll_wait(2) on
// epfd, completing when events are ready. Res is the number of events written
// to events, or -errno (-EINVAL from kernels without the op). flags are
// reserved (0). events must stay reachable and unchanged until the CQE
// arrives; it must not be empty.
func (s *SQE) PrepEpollWait(epfd int, events []unix.EpollEvent, flags uint32) {
	s.prepRW(OpEpollWait, epfd, sliceAddr(events), uint32(len(events)), 0)
	s.OpFlags = flags
}

// SetUserData sets the value passed back in CQE.UserData. Call it after the
// Prep method, which resets it.
func (s *SQE) SetUserData(u uint64) { s.UserData = u }

// SetFlags sets the IOSQE_* flags (SQEIOLink, SQEIOHardlink, SQEAsync,
// SQEFixedFile, SQEBufferSelect, SQECQESkipSuccess, ...), replacing any set.
// Call it after the Prep method, which resets them.
func (s *SQE) SetFlags(f uint8) { s.Flags = f }

// AddFlags adds IOSQE_* flags to those already set (PrepRecvMultishot sets
// SQEBufferSelect itself).
func (s *SQE) AddFlags(f uint8) { s.Flags |= f }

// SetBufferGroup selects provided-buffer group bgid for this request
// (IOSQE_BUFFER_SELECT, 5.7): Addr must be 0 and the kernel picks a buffer.
func (s *SQE) SetBufferGroup(bgid uint16) {
	s.Flags |= SQEBufferSelect
	s.BufIndex = bgid
}

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

// NewTimespec converts d to a Timespec (seconds and nanoseconds); for
// PrepTimeout, PrepLinkTimeout and PrepTimeoutUpdate.
func NewTimespec(d time.Duration) Timespec {
	return Timespec{Sec: int64(d / time.Second), Nsec: int64(d % time.Second)}
}
