//go:build linux

package ringev_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestRequestCloseFdBeforeTheWaitNeverReachesTheKernel: CloseFd in the handler that made a Read
// on the fd cancels it without it reaching the kernel: ECANCELED, and the pipe (read through a
// dup) keeps its bytes.
func TestRequestCloseFdBeforeTheWaitNeverReachesTheKernel(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		rp, wp := ownedPipe(t)
		testutil.Write(t, wp.fd, []byte("ab"))
		dup, err := unix.Dup(rp.fd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(dup) })
		l := newLoop(t, backend)
		var rec, cls recorder
		if _, err := l.Read(rp.fd, make([]byte, 1), -1, rec.cb, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := l.CloseFd(rp.fd, cls.cb, 0); err != nil {
			t.Fatal(err)
		}
		rp.HandOver()
		until(t, l, func() bool { return rec.n() > 0 && cls.n() > 0 })
		if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
			t.Fatalf("the Read: %d callbacks, last N %d err %v, want one with ECANCELED", rec.n(), c.N, c.Err)
		}
		if c := cls.last(t); c.Err != nil {
			t.Fatalf("CloseFd: %v", c.Err)
		}
		expectHeld(t, dup, "ab")
	})
}

// TestRequestOnAnFdThatBecameTheLoopsOwnIsRefused: a number that the loop took requests on
// and then made one of its own fds (the exact-signal eventfd, watched from the first
// AddSignal of a WithExactSignals loop) is refused with EBADF from then on: the requests'
// fast check, which remembers that a number is not the loop's, asks again.
func TestRequestOnAnFdThatBecameTheLoopsOwnIsRefused(t *testing.T) {
	if ringev.ExactSignalFd() < 0 { // make the process's eventfd first (it stays open)
		l0 := newExactLoop(t, "epoll")
		if _, err := l0.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
			t.Fatal(err)
		}
		l0.Close()
	}
	fd := ringev.ExactSignalFd()
	if fd < 0 {
		t.Fatal("no exact-signal eventfd after AddSignal on a WithExactSignals loop")
	}
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newExactLoop(t, backend)
		nop := func(*ringev.Completion) {}
		if _, err := l.Fsync(fd, false, nop, 0); err != nil {
			t.Fatalf("Fsync on fd %d before the loop watches it: %v", fd, err)
		}
		if _, err := l.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Fsync(fd, false, nop, 0); !errors.Is(err, unix.EBADF) {
			t.Fatalf("Fsync on fd %d, the loop's exact-signal eventfd now: %v, want EBADF", fd, err)
		}
	})
}
