//go:build linux

package ringev_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
)

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
