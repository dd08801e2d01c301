//go:build linux

package ringev_test

// Tests of Loop.ReadNonblocking and Loop.WriteNonblocking (io.go; once.go: rideIO, reapRide,
// adoptNews, dropNews). On the "uring" backend a handler's read or write goes to the kernel as an
// SQE, with, when the readiness cache is used up, an IORING_OP_EPOLL_WAIT on the loop's epoll set
// behind it in the same io_uring_enter(2); what that look finds ("news") serves the next Once as
// a wait's would. Everywhere else (other backends, the uring fallback for kernels without
// IORING_OP_EPOLL_WAIT, another goroutine, after Close, before the ring's first EPOLL_WAIT
// completed) the methods are read(2) and write(2).
//
// Each behaviour runs on every backend (and the uring fallback), in every dispatch mode where
// the mode matters. A non-blocking read or write never waits, so a handler's I/O that does is a
// failure: the guards below (noBlock, watch) make such a call end, by putting a byte into
// the pipe or making room in it, and fail the test instead of letting it hang.

import (
	"testing"
)

// TestLoopIOSteadyStateDoesNotAllocate: once warmed up, a read event of fd_speed2 with the loop
// methods (buffers in a heap struct) allocates nothing, in every mode on every backend.
func TestLoopIOSteadyStateDoesNotAllocate(t *testing.T) {
	eachMode(t, withFallback(), allModes, func(t *testing.T, backend string, m mode) {
		s := newSpeed(t, backend, true, 1, m.opts()...)
		watch(t, s.l, 2*deadline, unblockRead(s.w))
		s.run(t, 1000)
		if a := testing.AllocsPerRun(1000, func() { s.run(t, 1) }); a != 0 {
			t.Fatalf("%.2f allocations per read event, want 0", a)
		}
		s.check(t)
	})
}
