//go:build linux

// Package testutil holds helpers shared by ringev's tests: nonblocking pipes and socketpairs that
// close themselves when the test ends, guarded calls into a loop so that no test can hang, and
// kernel-version skips.
//
// The package does not import the root package (so that the root package's own internal tests can
// use it without an import cycle): the loop is seen through the small Looper and Runner interfaces,
// which *ringev.Loop satisfies.
//
// Every guarded call has a deadline. When it passes, the loop is woken (Looper.Post of a no-op, or
// Runner.Stop) so that the blocked call returns and the test fails with a message; if the loop is
// still blocked HangGrace later, waking does not work either and the test binary panics with the
// test's name instead of hanging until go test's own timeout.
package testutil

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Looper is the part of *ringev.Loop that Once and OnceUntil use: Once runs one handler, and Post
// (safe from any goroutine) is how a blocked Once is woken at the deadline.
type Looper interface {
	Once() error
	Post(f func()) error
}

// Runner is the part of *ringev.Loop that Run uses: Stop (safe from any goroutine) ends a Run that
// is still going at the deadline.
type Runner interface {
	Run() error
	Stop()
}

// HangGrace is how long a guarded call may stay blocked after its deadline and the wake-up that
// follows it before the test binary panics: a loop that neither returns nor can be woken hangs.
const HangGrace = 10 * time.Second

// Pipe returns the read and write ends of a new pipe, both O_NONBLOCK|O_CLOEXEC (pipe2(2)). Both
// ends are closed by t.Cleanup. It fails the test if pipe2 fails.
func Pipe(t testing.TB) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	t.Cleanup(func() {
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
	})
	return p[0], p[1]
}

// Socketpair returns the two ends of a new AF_UNIX SOCK_STREAM socketpair, both nonblocking and
// close-on-exec. Both ends are closed by t.Cleanup. It fails the test if socketpair(2) fails.
func Socketpair(t testing.TB) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	t.Cleanup(func() {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
	})
	return fds[0], fds[1]
}

// Write writes all of p to the nonblocking fd in one write(2) and fails the test on an error or a
// short write. Call it from the test's goroutine (handlers run there too).
func Write(t testing.TB, fd int, p []byte) {
	t.Helper()
	n, err := unix.Write(fd, p)
	if err != nil {
		t.Fatalf("write fd %d: %v", fd, err)
	}
	if n != len(p) {
		t.Fatalf("write fd %d: wrote %d of %d bytes", fd, n, len(p))
	}
}

// Drain reads the nonblocking fd until it would block (EAGAIN) or reports end of file, and returns
// the number of bytes read. It fails the test on any other error.
func Drain(t testing.TB, fd int) int {
	t.Helper()
	var buf [4096]byte
	total := 0
	for {
		n, err := unix.Read(fd, buf[:])
		switch {
		case err == unix.EAGAIN:
			return total
		case err == unix.EINTR:
			continue
		case err != nil:
			t.Fatalf("read fd %d: %v", fd, err)
		case n == 0:
			return total
		}
		total += n
	}
}

// watchdog ends a guarded call that runs past its deadline: it calls wake once at the deadline and
// panics HangGrace later if the call has still not returned.
type watchdog struct {
	done    chan struct{}
	expired atomic.Bool
}

func startWatchdog(what string, deadline time.Duration, wake func()) *watchdog {
	w := &watchdog{done: make(chan struct{})}
	go func() {
		d := time.NewTimer(deadline)
		defer d.Stop()
		select {
		case <-w.done:
			return
		case <-d.C:
		}
		w.expired.Store(true)
		wake()
		g := time.NewTimer(HangGrace)
		defer g.Stop()
		select {
		case <-w.done:
		case <-g.C:
			panic(fmt.Sprintf("testutil: %s: still blocked %v after its %v deadline and after the loop was woken: the loop hangs",
				what, HangGrace, deadline))
		}
	}()
	return w
}

func (w *watchdog) stop() { close(w.done) }

// OnceErr calls l.Once one time and returns its error. If Once has not returned by the deadline,
// the loop is woken with a posted no-op and the test fails (Fatal) once Once returns.
func OnceErr(t testing.TB, l Looper, deadline time.Duration) error {
	t.Helper()
	wd := startWatchdog(t.Name()+": Loop.Once", deadline, func() { _ = l.Post(func() {}) })
	var err error
	func() {
		defer wd.stop() // also when a handler panics through Once
		err = l.Once()
	}()
	if wd.expired.Load() {
		t.Fatalf("Loop.Once did not return within %v (returned %v only after a posted wake-up)", deadline, err)
	}
	return err
}

// Once calls l.Once one time and fails the test (Fatal) if it returns an error or does not return
// within the deadline.
func Once(t testing.TB, l Looper, deadline time.Duration) {
	t.Helper()
	if err := OnceErr(t, l, deadline); err != nil {
		t.Fatalf("Loop.Once: %v", err)
	}
}

// OnceUntil calls l.Once until cond returns true (cond is checked before each call, so no call is
// made if it already holds) and returns how many Once calls it made. It fails the test (Fatal) if
// Once returns an error or the condition does not hold within the deadline; a Once blocked at the
// deadline is woken with a posted no-op first.
func OnceUntil(t testing.TB, l Looper, cond func() bool, deadline time.Duration) int {
	t.Helper()
	wd := startWatchdog(t.Name()+": OnceUntil", deadline, func() { _ = l.Post(func() {}) })
	defer wd.stop()
	n := 0
	for !cond() {
		if wd.expired.Load() {
			t.Fatalf("condition not met within %v (%d Once calls)", deadline, n)
		}
		if err := l.Once(); err != nil {
			t.Fatalf("Loop.Once (call %d, condition not met yet): %v", n+1, err)
		}
		n++
	}
	return n
}

// Run calls l.Run and returns its error. If Run has not returned by the deadline it is stopped
// with l.Stop and the test is marked failed (Error, so the caller still sees Run's result).
func Run(t testing.TB, l Runner, deadline time.Duration) error {
	t.Helper()
	wd := startWatchdog(t.Name()+": Loop.Run", deadline, l.Stop)
	var err error
	func() {
		defer wd.stop() // also when a handler panics through Run
		err = l.Run()
	}()
	if wd.expired.Load() {
		t.Errorf("Loop.Run did not return within %v; it returned %v only after Stop", deadline, err)
	}
	return err
}

// KernelAtLeast reports whether the running kernel's version (uname(2) release) is at least
// major.minor. An unreadable release counts as too old.
func KernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	var gotMajor, gotMinor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &gotMajor, &gotMinor); err != nil {
		return false
	}
	return gotMajor > major || (gotMajor == major && gotMinor >= minor)
}

// SkipUnlessKernel skips the test, naming the feature and the kernel it needs, when the running
// kernel is older than major.minor.
func SkipUnlessKernel(t testing.TB, major, minor int, feature string) {
	t.Helper()
	if !KernelAtLeast(major, minor) {
		var u unix.Utsname
		_ = unix.Uname(&u)
		t.Skipf("%s needs Linux %d.%d; this kernel is %s", feature, major, minor, unix.ByteSliceToString(u.Release[:]))
	}
}
