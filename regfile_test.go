//go:build linux

package ringev_test

// Tests of Loop.RegisterFile and UnregisterFile: the ring's registered-file table, its errors,
// and its hold on the file.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// TestRegisteredFileOutlivesARawClose: on uring the registered-file table holds the file, as
// RegisterFile documents: after a close(2) of the registered read end a write still finds a
// reader, and a Read on the closed number reads the old pipe through the table; UnregisterFile
// then releases it (the write gets EPIPE).
func TestRegisteredFileOutlivesARawClose(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	register(t, l, r)
	if err := testutil.Close(t, r); err != nil {
		t.Fatal(err)
	}
	if err := writeErr(w); err != nil {
		t.Fatalf("write after close(2) of the registered read end: %v; the table should hold the file", err)
	}
	var rec recorder
	must(t)(l.Read(r, make([]byte, 4), -1, rec.cb, 0))
	until(t, l, func() bool { return rec.n() > 0 })
	wantOne(t, &rec, 1)
	if err := l.UnregisterFile(r); err != nil {
		t.Fatal(err)
	}
	if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write after UnregisterFile of the closed read end: %v, want EPIPE (the file released)", err)
	}
}

// TestUnregisterFileThenCloseReleasesTheFile: after UnregisterFile, a close(2) of the fd
// releases the file at once (the pipe's writer gets EPIPE), on every backend.
func TestUnregisterFileThenCloseReleasesTheFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		if backend == "uring" {
			requireRegisteredFiles(t)
		}
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		if err := l.RegisterFile(r); err != nil {
			t.Fatal(err)
		}
		if err := l.UnregisterFile(r); err != nil {
			t.Fatal(err)
		}
		if err := testutil.Close(t, r); err != nil {
			t.Fatal(err)
		}
		if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
			t.Fatalf("write after UnregisterFile and close(2) of the read end: %v, want EPIPE", err)
		}
	})
}

// TestRegisterFileOffUringDoesNothing: on every backend but uring (epoll, poll, uring-poll)
// RegisterFile returns nil and holds no file: requests on the fd work as before (a Read of a
// pipe; a Send and a Recv on a socket), and a close(2) once they are done releases the file at
// once, with no UnregisterFile (the pipe's writer gets EPIPE; the socket's peer reads EOF).
func TestRegisterFileOffUringDoesNothing(t *testing.T) {
	eachBackend(t, backendsBut("uring"), func(t *testing.T, backend string) {
		r, w := testutil.PipeHolding(t, "a")
		a, peer := testutil.Socketpair(t)
		l := newLoop(t, backend)
		for _, fd := range []int{r, a} {
			if err := l.RegisterFile(fd); err != nil {
				t.Fatalf("RegisterFile(%d) on %s: %v, want nil", fd, backend, err)
			}
		}
		var rec, snd, rcv recorder
		must(t)(l.Read(r, make([]byte, 4), -1, rec.cb, 0))
		must(t)(l.Send(a, []byte("ping"), 0, snd.cb, 0))
		must(t)(l.Recv(a, make([]byte, 8), 0, rcv.cb, 0))
		testutil.Write(t, peer, []byte("pong"))
		until(t, l, func() bool { return rec.n() > 0 && snd.n() > 0 && rcv.n() > 0 })
		wantOne(t, &rec, 1)
		wantOne(t, &snd, 4)
		wantOne(t, &rcv, 4)
		if err := testutil.Close(t, r); err != nil {
			t.Fatal(err)
		}
		if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
			t.Fatalf("write after close(2) of the read end registered on %s: %v, want EPIPE (no table holds the file)", backend, err)
		}
		if err := testutil.Close(t, a); err != nil {
			t.Fatal(err)
		}
		testutil.ExpectEOF(t, peer, 0, "close(2) of a socket RegisterFile was given on "+backend)
		quiet(t, l)
	})
}

// TestRegisterFileOnAKernelWithoutSparseTablesNamesTheFeature: where the kernel refuses a
// sparse registered-file table (before Linux 5.19: IORING_REGISTER_FILES2 gives EINVAL, played
// by SetFileTableFault), RegisterFile returns an error that wraps EINVAL and names
// IORING_RSRC_REGISTER_SPARSE and its release; the fd stays unregistered (requests on it read,
// and a close(2) releases it), and a later call tries again.
func TestRegisterFileOnAKernelWithoutSparseTablesNamesTheFeature(t *testing.T) {
	requireRegisteredFiles(t)
	r, w := testutil.PipeHolding(t, "a")
	l := newLoop(t, "uring")
	restore := ringev.SetFileTableFault(fmt.Errorf("uring: io_uring_register(%s): %w", uring.RegisterOpName(uring.RegisterFiles2), unix.EINVAL))
	err := l.RegisterFile(r)
	restore()
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "IORING_RSRC_REGISTER_SPARSE, Linux 5.19") {
		t.Fatalf("RegisterFile without sparse tables: %v; want an error wrapping EINVAL naming IORING_RSRC_REGISTER_SPARSE, Linux 5.19", err)
	}
	t.Logf("the error: %v", err)
	var rec recorder
	must(t)(l.Read(r, make([]byte, 4), -1, rec.cb, 0))
	until(t, l, func() bool { return rec.n() > 0 })
	wantOne(t, &rec, 1)
	if err := l.RegisterFile(w); err != nil {
		t.Fatalf("RegisterFile after the fault: %v (it should make the table now)", err)
	}
	if err := testutil.Close(t, r); err != nil {
		t.Fatal(err)
	}
	if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write after close(2) of the read end whose RegisterFile failed: %v, want EPIPE (no table holds it)", err)
	}
}

// TestRegisterFileOnAKernelThatReleasesLateNamesIt: where the kernel lets the file of an
// emptied slot go only a second later (before Linux 6.4, played by SetFileReleaseLate),
// RegisterFile returns an error that wraps EOPNOTSUPP and names the kernel it needs, and
// leaves fd unregistered: a close(2) of the read end gives its writer EPIPE at once.
func TestRegisterFileOnAKernelThatReleasesLateNamesIt(t *testing.T) {
	r, w := testutil.PipeHolding(t, "a")
	l := newLoop(t, "uring")
	restore := ringev.SetFileReleaseLate()
	err := l.RegisterFile(r)
	restore()
	if !errors.Is(err, unix.EOPNOTSUPP) || !strings.Contains(err.Error(), "before Linux 6.4") {
		t.Fatalf("RegisterFile on a kernel that releases late: %v; want an error wrapping EOPNOTSUPP naming Linux 6.4", err)
	}
	t.Logf("the error: %v", err)
	if err := testutil.Close(t, r); err != nil {
		t.Fatal(err)
	}
	if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write after close(2) of the read end whose RegisterFile failed: %v, want EPIPE (no table holds it)", err)
	}
}

// TestRegisterFileRefusesBadInput: on every backend RegisterFile and UnregisterFile refuse, with
// the documented error and no effect, a negative fd, one beyond any int32 and each of the
// loop's own fds (EBADF), a call from another goroutine (ErrNotOwner), an fd that CloseFd is
// closing (ErrFdClosing on uring, where a Read in the kernel keeps it open; the emulation has
// closed it already: EBADF) and a closed loop (ErrClosed). RegisterFile of a number that names
// no open file gets EBADF; UnregisterFile of one, and of an fd never registered, does nothing
// (nil); a second RegisterFile of a registered fd does nothing.
func TestRegisterFileRefusesBadInput(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		before := testutil.OpenFds(t)
		l := newLoop(t, backend)
		// The loop makes its own fds lazily, some with its first request: make one first.
		var rd recorder
		must(t)(l.Read(r, make([]byte, 1), -1, rd.cb, 0))
		testutil.Write(t, w, oneByte)
		until(t, l, func() bool { return rd.n() > 0 })
		for _, fd := range testutil.FdsSince(t, before) {
			if err := l.RegisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("RegisterFile(%d), one of the loop's own fds: %v, want EBADF", fd, err)
			}
			if err := l.UnregisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("UnregisterFile(%d), one of the loop's own fds: %v, want EBADF", fd, err)
			}
		}
		for _, fd := range []int{-1, 1 << 31, 1 << 40, -1 << 40} {
			if err := l.RegisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("RegisterFile(%d): %v, want EBADF", fd, err)
			}
			if err := l.UnregisterFile(fd); !errors.Is(err, unix.EBADF) {
				t.Errorf("UnregisterFile(%d): %v, want EBADF", fd, err)
			}
		}
		closed := testutil.ClosedFdNumber(t)
		if err := l.RegisterFile(closed); !errors.Is(err, unix.EBADF) {
			t.Errorf("RegisterFile(%d), a closed number: %v, want EBADF", closed, err)
		}
		if err := l.UnregisterFile(closed); err != nil {
			t.Errorf("UnregisterFile of a closed number: %v, want nil", err)
		}
		if err := l.UnregisterFile(w); err != nil {
			t.Errorf("UnregisterFile of an fd never registered: %v, want nil", err)
		}
		if backend == "uring" {
			requireRegisteredFiles(t)
		}
		for range 2 {
			if err := l.RegisterFile(r); err != nil {
				t.Fatalf("RegisterFile(%d): %v", r, err)
			}
		}
		var foreign [2]error
		onOtherGoroutine(t, func() { foreign[0], foreign[1] = l.RegisterFile(w), l.UnregisterFile(r) })
		for i, name := range []string{"RegisterFile", "UnregisterFile"} {
			if !errors.Is(foreign[i], ringev.ErrNotOwner) {
				t.Errorf("%s from another goroutine: %v, want ErrNotOwner", name, foreign[i])
			}
		}
		// Registered: a Read works; CloseFd then waits for it on uring.
		var rd2, cls recorder
		must(t)(l.Read(r, make([]byte, 1), -1, rd2.cb, 0))
		untilWaited(t, l)
		must(t)(l.CloseFd(r, cls.cb, 0))
		testutil.HandOver(t, r)
		err := l.RegisterFile(r)
		if want := ringev.ErrFdClosing; backend == "uring" && !errors.Is(err, want) || !errors.Is(err, unix.EBADF) {
			t.Errorf("RegisterFile right after CloseFd: %v, want ErrFdClosing on uring, EBADF on all", err)
		}
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
		if err := l.RegisterFile(w); !errors.Is(err, ringev.ErrClosed) {
			t.Errorf("RegisterFile on a closed loop: %v, want ErrClosed", err)
		}
		if err := l.UnregisterFile(r); !errors.Is(err, ringev.ErrClosed) {
			t.Errorf("UnregisterFile on a closed loop: %v, want ErrClosed", err)
		}
	})
}

// TestRegisterFileRefusesAnFdBeyondTheTable: on uring an fd at or above the table's size
// (min(RLIMIT_NOFILE, 65536) slots when the first RegisterFile made it) gets ERANGE, and
// requests on it still work, unregistered.
func TestRegisterFileRefusesAnFdBeyondTheTable(t *testing.T) {
	requireRegisteredFiles(t)
	const slots, high = 1000, 1500
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur <= high {
		t.Skipf("RLIMIT_NOFILE %d allows no fd number %d (err %v)", lim.Cur, high, err)
	}
	r0, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	small := lim
	small.Cur = slots
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &small); err != nil {
		t.Fatal(err)
	}
	err := l.RegisterFile(w) // makes the table, of 1000 slots
	if rerr := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(r0, high, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	testutil.Own(t, high)
	if err := l.RegisterFile(high); !errors.Is(err, unix.ERANGE) {
		t.Fatalf("RegisterFile(%d) with a table of %d slots: %v, want ERANGE", high, slots, err)
	}
	var rec recorder
	must(t)(l.Read(high, make([]byte, 4), -1, rec.cb, 0))
	testutil.Write(t, w, []byte("x"))
	until(t, l, func() bool { return rec.n() > 0 })
	wantOne(t, &rec, 1)
}

// writeErr writes one byte to the pipe's write end w and returns write(2)'s error: EPIPE once
// no file holds the read end.
func writeErr(w int) error {
	_, err := unix.Write(w, oneByte)
	return err
}
