//go:build unix

package ringev

// This file is the choice, on the uring backend, of the path of a handler's I/O through
// Loop.ReadNonblocking and WriteNonblocking: read(2) and write(2) by default, or, with
// WithIOPath("ring"), through the ring with the loop's next look at its fds (rideIO, once.go;
// the backend's side in backend_uring_ride_linux.go). The ring path spares a syscall per look
// and costs a trip through the ring (SQEs, CQEs, the kernel's io_kiocb and task work): it wins
// where a syscall's entry costs more than that trip (page-table isolation: ~0.6-1.1 µs a
// syscall) and loses where syscalls are cheap (~170 ns). The loop does not time the two paths:
// the caller chooses (docs/design.md, "Which path a handler's I/O takes").

import "errors"

// Names of the paths a handler's I/O through the loop's methods can take (WithIOPath,
// Loop.IOPath).
const (
	// IOPathAuto is the default path, read(2) and write(2).
	//
	// Deprecated: the loop no longer measures the two paths and chooses between them; "auto"
	// is accepted and means IOPathSyscall. Use IOPathRing to send handler I/O through the ring.
	IOPathAuto = "auto"
	// IOPathRing sends a handler's I/O through the uring backend's ring with the loop's next
	// look at its fds, when the handler has used up the loop's readiness: one io_uring_enter(2)
	// where read(2) and the next epoll_wait(2) make two. It wins where syscalls are dear.
	IOPathRing = "ring"
	// IOPathSyscall makes a handler's I/O read(2) or write(2), as the package functions do (the
	// default).
	IOPathSyscall = "syscall"
)

// ErrUnknownIOPath is returned (wrapped, with the name) by New for a WithIOPath name other than
// IOPathAuto, IOPathRing and IOPathSyscall.
var ErrUnknownIOPath = errors.New("ringev: unknown I/O path")

// WithIOPath chooses the path of a handler's I/O through Loop.ReadNonblocking and
// WriteNonblocking on the uring backend: IOPathSyscall ("syscall", the default: read(2) and
// write(2)) or IOPathRing ("ring": through the ring with the loop's next look, when the handler
// has used up the loop's readiness: one syscall where two are made otherwise, which pays where
// a syscall costs ~0.6 µs or more, as with page-table isolation, and costs more than it spares
// where it costs ~170 ns). IOPathAuto ("auto") is deprecated and means IOPathSyscall. Where no
// look can ride (the other backends, WithFreshReadiness, kernels without IORING_OP_EPOLL_WAIT,
// Linux 6.15) the I/O is read(2)/write(2) whatever the choice, and Loop.IOPathReason says why.
// New returns an error wrapping ErrUnknownIOPath for any other name.
func WithIOPath(path string) Option {
	return func(o *options) { o.ioPath, o.ioPathSet = path, true }
}

// IOPath returns the path a handler's I/O through Loop.ReadNonblocking and WriteNonblocking
// takes when the handler has used up the loop's readiness: IOPathRing or IOPathSyscall (never
// IOPathAuto); IOPathReason says why. Before the ring's first wait has completed, the ring
// path's I/O is read(2)/write(2) whatever IOPath says (no look has been made to ride with).
// Read it on the loop's goroutine, or through Post.
func (l *Loop) IOPath() string {
	if l.rideUsable() && l.ride.ringIO {
		return IOPathRing
	}
	return IOPathSyscall
}

// IOPathReason says why IOPath is what it is: the option that chose it (`WithIOPath("ring")`,
// `WithIOPath("syscall")`, ...; without one "the default: ..."), or why no look can ride (for
// example "the epoll backend has no ring: ..."). Read it on the loop's goroutine, or through
// Post, as IOPath.
func (l *Loop) IOPathReason() string {
	b := l.ride
	switch {
	case l.closed:
		return "the loop is closed: its I/O methods are read(2)/write(2)"
	case b == nil:
		return "the " + l.beName + " backend has no ring: handler I/O is read(2)/write(2)"
	case l.fresh:
		return "WithFreshReadiness: the loop would not use a look riding with the I/O, so handler I/O is read(2)/write(2)"
	case b.fallback && b.asked != IOPathSyscall: // (asked for read(2)/write(2), the option says why)
		return "this kernel has no IORING_OP_EPOLL_WAIT (Linux 6.15), so no look can ride with the I/O: handler I/O is read(2)/write(2)"
	case b.asked == IOPathAuto:
		return `WithIOPath("auto"), deprecated: the default, read(2)/write(2)`
	case b.asked != "":
		return `WithIOPath("` + b.asked + `")`
	}
	return `the default: handler I/O is read(2)/write(2); WithIOPath("ring") sends it through the ring with the loop's next look`
}

// rideUsable reports whether a look can ride with a handler's I/O on this loop at all.
func (l *Loop) rideUsable() bool {
	return l.ride != nil && !l.fresh && !l.ride.fallback
}

// rideState is what the core reads of a backend that can carry a handler's I/O with its next
// look at the fds (rider): the backend keeps the first three fields, the core the rest; rideIO
// reads them without a call.
type rideState struct {
	inflight bool // the backend's look is in the kernel (it found nothing yet): no other can ride
	worked   bool // a look through the backend completed once (the kernel has the op)
	fallback bool // no look can ride on this kernel (before Linux 6.15: no IORING_OP_EPOLL_WAIT)
	// ringIO: a handler's I/O that may ride goes through the backend (WithIOPath("ring")).
	ringIO bool
	asked  string // the WithIOPath name New was given; "": none
	// found is how many fds the backend's look found, written by ride when it completed with
	// fds ready (0: none, and a look that found nothing stays in the kernel: inflight); they
	// are events[:found], the backend's buffer until its next look: the core copies them at
	// once and sets found to 0. full = found == len(events): more may be ready.
	found  int32
	events []readyFd
}

// rider is implemented by a backend that can carry a handler's I/O and its next look at the fds
// in one system call (the uring backend: an SQE for the I/O and an IORING_OP_EPOLL_WAIT behind
// it, backend_uring_ride_linux.go). The core decides when an I/O may ride (rideIO); the backend
// owns the SQEs and CQEs.
type rider interface {
	// rideShared returns the backend's rideState, which lives as long as the backend.
	rideShared() *rideState
	// ride makes the read or write of p on fd (trap: unix.SYS_READ or unix.SYS_WRITE, the
	// syscall it stands for) at the file position, without waiting for data or room, followed
	// by the backend's look at its fds, in one system call that does not wait, and waits
	// (with the runtime's syscall bookkeeping) only for an I/O the kernel did not finish at
	// once. res is the I/O's result as a CQE's: bytes, or -errno (-EOPNOTSUPP: the backend
	// could not ask without waiting; read(2) or write(2) answers). What the look found is in
	// rideState.found and events. err wraps a failed enter's errno; p may then stay the
	// kernel's until the backend closes.
	ride(trap uintptr, fd int, p []byte) (res int32, err error)
}

// setupIOPath applies WithIOPath(path) to the rider rd of a new loop ("": no option).
func setupIOPath(rd rider, path string) {
	b := rd.rideShared()
	b.ringIO, b.asked = path == IOPathRing, path
}
