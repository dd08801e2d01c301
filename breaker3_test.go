//go:build linux

package ringev_test

// Breaker tests for registered files (Loop.RegisterFile, UnregisterFile: the ring's
// registered-file table, IOSQE_FIXED_FILE, slot number = fd number), beyond regfile_test.go:
// the loop's own closes of a registered fd, Loop.Close, number reuse, registration changes from
// callbacks and handlers and between a request and its deadline, and random operations.

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestRegistrationErrors: on every backend, RegisterFile and UnregisterFile refuse, with the
// documented error and no effect, an fd beyond any int32 (EBADF), each of the loop's own fds
// (EBADF), a call from another goroutine (ErrNotOwner), a fd that CloseFd is closing
// (ErrFdClosing on uring, where a Read keeps it open) and a closed loop (ErrClosed);
// UnregisterFile of a closed number and of an fd never registered does nothing (nil), and a
// second RegisterFile of a registered fd does nothing.
func TestRegistrationErrors(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		if backend == "uring" {
			requireRegisteredFiles(t)
		}
		r, w := testutil.Pipe(t)
		before := map[int]bool{}
		for _, name := range openFds(t) {
			var n int
			fmtSscan(name, &n)
			before[n] = true
		}
		l := newLoop(t, backend)
		// The loop makes its own fds lazily, some with its first request: make one first.
		var rd recorder
		must(t)(l.Read(r, make([]byte, 1), -1, rd.cb, 0))
		testutil.Write(t, w, oneByte)
		until(t, l, func() bool { return rd.n() > 0 })
		for _, name := range openFds(t) {
			var fd int
			fmtSscan(name, &fd)
			if before[fd] || isClosed(fd) {
				continue
			}
			if err := l.RegisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("RegisterFile(%d), one of the loop's own fds: %v, want EBADF", fd, err)
			}
			if err := l.UnregisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("UnregisterFile(%d), one of the loop's own fds: %v, want EBADF", fd, err)
			}
		}
		for _, fd := range []int{1 << 31, 1 << 40, -1 << 40} {
			if err := l.RegisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("RegisterFile(%d): %v, want EBADF", fd, err)
			}
			if err := l.UnregisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("UnregisterFile(%d): %v, want EBADF", fd, err)
			}
		}
		if err := l.UnregisterFile(closedFdNumber(t)); err != nil {
			t.Errorf("UnregisterFile of a closed number: %v, want nil", err)
		}
		if err := l.UnregisterFile(w); err != nil {
			t.Errorf("UnregisterFile of an fd never registered: %v, want nil", err)
		}
		for range 2 {
			if err := l.RegisterFile(r); err != nil {
				t.Fatalf("RegisterFile(%d): %v", r, err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- l.UnregisterFile(r) }()
		select {
		case err := <-done:
			if !errors.Is(err, ringev.ErrNotOwner) {
				t.Errorf("UnregisterFile from another goroutine: %v, want ErrNotOwner", err)
			}
		case <-time.After(deadline):
			t.Fatal("UnregisterFile from another goroutine did not return")
		}
		// Still registered: a Read works, and on uring the fd is pinned by the table only.
		var rd2, cls recorder
		must(t)(l.Read(r, make([]byte, 1), -1, rd2.cb, 0))
		onceWithin(t, l, time.Millisecond)
		must(t)(l.CloseFd(r, cls.cb, 0))
		if backend == "uring" {
			if err := l.UnregisterFile(r); !errors.Is(err, ringev.ErrFdClosing) {
				t.Errorf("UnregisterFile while CloseFd waits for a Read: %v, want ErrFdClosing", err)
			}
		}
		until(t, l, func() bool { return cls.n() > 0 && rd2.n() > 0 })
		wantOne(t, &cls, 0)
		if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
			t.Errorf("write after CloseFd of the registered read end: %v, want EPIPE", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.UnregisterFile(r); !errors.Is(err, ringev.ErrClosed) {
			t.Errorf("UnregisterFile on a closed loop: %v, want ErrClosed", err)
		}
	})
}

// TestRegisterFileIsANoOpOffUring: on epoll and poll RegisterFile changes nothing: requests
// on the fd work, and a plain close(2) once they are done releases the file at once (the peer
// reads EOF), with no UnregisterFile.
func TestRegisterFileIsANoOpOffUring(t *testing.T) {
	eachBackend(t, []string{"epoll", "poll"}, func(t *testing.T, backend string) {
		a, peer := ownedSocketpair(t)
		l := newLoop(t, backend)
		if err := l.RegisterFile(a.fd); err != nil {
			t.Fatal(err)
		}
		var snd, rcv recorder
		must(t)(l.Send(a.fd, []byte("ping"), 0, snd.cb, 0))
		must(t)(l.Recv(a.fd, make([]byte, 8), 0, rcv.cb, 0))
		testutil.Write(t, peer.fd, []byte("pong"))
		until(t, l, func() bool { return snd.n() > 0 && rcv.n() > 0 })
		wantOne(t, &snd, 4)
		wantOne(t, &rcv, 4)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		expectEOF(t, peer.fd, 0, "close(2) of an fd RegisterFile was given on "+backend)
		quiet(t, l)
	})
}
