package ringev_test

// Reliability (issue 11): the shapes of public bug reports against event loops, each a whole
// class. A dup'd fd closed with close(2) behind the loop (items 1), a raw close while the poll
// backend sleeps in ppoll (2), io_uring_enter denied while io_uring_setup works (4), handlers
// that re-queue themselves starving the fds (6), half-close and the flags a handler sees (6b).
// Helpers of this file start with rel.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// relDeadline bounds every wait in this file; it only turns a hang into a failure.
const relDeadline = 5 * time.Second

// relMode is a dispatch mode: New's options besides the backend.
type relMode struct {
	name string
	opts []ringev.Option
}

// relModes are the three dispatch modes.
var relModes = []relMode{
	{"default", nil},
	{"fresh", []ringev.Option{ringev.WithFreshReadiness()}},
	{"all", []ringev.Option{ringev.WithDispatchAll()}},
}

// relNewLoop creates a loop on backend for the calling (sub)test goroutine and closes it at
// cleanup, checking that Close returns nil. A backend that cannot be set up here (io_uring
// switched off or missing: EPERM, ENOSYS) skips the test with New's error.
func relNewLoop(t *testing.T, backend string, opts ...ringev.Option) *ringev.Loop {
	t.Helper()
	l, err := ringev.New(append([]ringev.Option{ringev.WithBackend(backend)}, opts...)...)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
			t.Skipf("backend %q is not available here: %v", backend, err)
		}
		t.Fatalf("New(WithBackend(%q)): %v", backend, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Loop.Close: %v", err)
		}
	})
	return l
}

// relFd is an fd the test owns; Close closes it once (a second close could hit a file that
// took the number since). Cleanup closes what is still open.
type relFd struct{ fd int }

func relOwn(t *testing.T, fd int) *relFd {
	f := &relFd{fd}
	t.Cleanup(func() { f.Close() })
	return f
}

func (f *relFd) Close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}

// relPipe returns a new nonblocking pipe whose ends the test owns.
func relPipe(t *testing.T) (r, w *relFd) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	return relOwn(t, p[0]), relOwn(t, p[1])
}

// relAddFd is Loop.AddFd that fails the test on error.
func relAddFd(t *testing.T, l *ringev.Loop, fd int, flags ringev.Flags, h ringev.FdHandler) *ringev.FdEvent {
	t.Helper()
	ev, err := l.AddFd(fd, flags, h)
	if err != nil {
		t.Fatalf("AddFd(%d, %v): %v", fd, flags, err)
	}
	return ev
}

// relRun is what relRunFor saw: the Onces it took, the errors Once returned, and the CPU time
// the loop's thread used meanwhile.
type relRun struct {
	onces int
	errs  []error
	cpu   time.Duration
}

// relThreadCPU is the CPU time (user and system) the calling thread has used.
func relThreadCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatalf("getrusage(RUSAGE_THREAD): %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// relRunFor runs the loop one Once at a time until a timer of d fires (the loop's goroutine is
// locked to its thread, so the thread's CPU time is the loop's). Once may return errors; the
// loop goes on. It fails the test if the timer has not fired within relDeadline.
func relRunFor(t *testing.T, l *ringev.Loop, d time.Duration) relRun {
	t.Helper()
	fired := false
	if l.AddTimer(d, func(*ringev.Timer) { fired = true }) == nil {
		t.Fatal("AddTimer returned nil")
	}
	var run relRun
	start, cpu0 := time.Now(), relThreadCPU(t)
	for !fired {
		if time.Since(start) > relDeadline {
			t.Fatalf("a %v timer has not fired after %v (%d Onces)", d, relDeadline, run.onces)
		}
		err := testutil.OnceErr(t, l, relDeadline)
		run.onces++
		if err != nil {
			run.errs = append(run.errs, err)
			if len(run.errs) > 100 {
				t.Fatalf("Once keeps failing: %v", err)
			}
		}
	}
	run.cpu = relThreadCPU(t) - cpu0
	return run
}

// asleep reports whether the loop slept through the run: at most maxOnces Onces, and less than
// a tenth of the timer's d in CPU time (a loop spinning inside one Once uses all of d that the
// machine gives it; a sleeping one a few µs).
func (r relRun) asleep(d time.Duration, maxOnces int) bool {
	return r.onces <= maxOnces && r.cpu < d/10
}

// relTakeNumber makes fd number n name a new file: the read end of a new empty pipe (dup3(2)
// onto n). It returns the ends the test then owns.
func relTakeNumber(t *testing.T, n int) (r, w *relFd) {
	t.Helper()
	pr, pw := relPipe(t)
	if pr.fd == n {
		return pr, pw
	}
	if err := unix.Dup3(pr.fd, n, unix.O_CLOEXEC); err != nil {
		t.Fatalf("dup3(%d, %d): %v", pr.fd, n, err)
	}
	pr.Close()
	return relOwn(t, n), pw
}

// relDupCase is one shape of TestRawCloseWhileDupKeepsFileOpen.
type relDupCase struct {
	name    string
	write   bool // watch the pipe's write end for Write (else its read end for Read)
	syscall bool // the handler makes its own read(2)/write(2) instead of the loop's methods
	reuse   bool // the number is reused and watched again while the first event is still open
}

// relDupCases: the first in every dispatch mode, the others in the default one.
var relDupCases = []relDupCase{
	{name: "read/loopIO/Close"},
	{name: "write/loopIO/Close", write: true},
	{name: "read/loopIO/reuse", reuse: true},
	{name: "read/syscall/Close", syscall: true},
	{name: "read/syscall/reuse", syscall: true, reuse: true},
}

// TestRawCloseWhileDupKeepsFileOpen (issue 11 item 1): a pipe end n is watched, a dup of it
// keeps the file open, and n is closed with close(2) behind the loop's back; then the pipe is
// written (or, for the write end, stays writable). A handler that does its I/O with the loop's
// methods (Loop.ReadNonblocking, WriteNonblocking) runs at most once more: its I/O fails with
// EBADF, the loop disarms the fd's events, and that Once returns an error wrapping EBADF that
// names the fd; the loop then sleeps until its 100 ms timer. Then the event is closed (Close
// returns nil; or, "reuse", left open), a new empty pipe takes the number n and is watched for
// Read: its handler never runs, the old one never again, and the loop sleeps until the next 100
// ms timer. A handler that makes its own read(2) cannot be told from one that leaves its data
// unread, so it keeps running until its event is closed (the documented limit, loop contract
// item 5); what follows holds for it too. Every backend, every dispatch mode.
func TestRawCloseWhileDupKeepsFileOpen(t *testing.T) {
	for _, b := range ringev.Backends() {
		for i, c := range relDupCases {
			modes := relModes
			if i > 0 {
				modes = relModes[:1]
			}
			for _, m := range modes {
				t.Run(b+"/"+m.name+"/"+c.name, func(t *testing.T) { relRawCloseWithDup(t, b, m, c) })
			}
		}
	}
}

func relRawCloseWithDup(t *testing.T, b string, m relMode, c relDupCase) {
	r, w := relPipe(t)
	l := relNewLoop(t, b, m.opts...)
	watched, flags := r, ringev.Read
	if c.write {
		watched, flags = w, ringev.Write
	}
	d, err := unix.Dup(watched.fd)
	if err != nil {
		t.Fatalf("dup: %v", err)
	}
	relOwn(t, d)
	h1, closedRuns := 0, 0
	var ioErrs []error
	buf := make([]byte, 64)
	closed := false
	io := l.ReadNonblocking
	if c.write {
		io = l.WriteNonblocking
	}
	if c.syscall {
		io = unix.Read
		if c.write {
			io = unix.Write
		}
	}
	ev := relAddFd(t, l, watched.fd, flags, func(ev *ringev.FdEvent, f ringev.Flags) {
		h1++
		if closed {
			closedRuns++
		}
		if _, err := io(ev.Fd(), buf[:1]); err != nil && !errors.Is(err, unix.EAGAIN) {
			ioErrs = append(ioErrs, err)
		}
	})
	if !c.write {
		testutil.Write(t, w.fd, []byte{'a'})
	}
	testutil.OnceUntil(t, l, func() bool { return h1 > 0 }, relDeadline)
	n := watched.fd
	if err := watched.Close(); err != nil {
		t.Fatalf("close(2): %v", err)
	}
	closed = true
	if !c.write {
		// Through the dup: w may be the number just closed for the write case.
		testutil.Write(t, w.fd, []byte{'b'})
	}
	const period = 100 * time.Millisecond
	run := relRunFor(t, l, period)
	t.Logf("after the raw close of fd %d: h1 ran %d times in %d Onces (%v CPU), Once errors %v, I/O errors %d", n, closedRuns, run.onces, run.cpu, run.errs, len(ioErrs))
	if !c.syscall {
		if closedRuns > 1 {
			t.Errorf("h1 ran %d times after its fd was closed with close(2), want at most 1", closedRuns)
		}
		if !run.asleep(period, 5) {
			t.Errorf("the loop ran %d Onces using %v of CPU before its %v timer, want it asleep (at most 5 Onces, under %v)", run.onces, run.cpu, period, period/10)
		}
		for _, err := range run.errs {
			if !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), fmt.Sprint("fd ", n, " ")) {
				t.Errorf("Once: %v, want an error wrapping EBADF naming fd %d", err, n)
			}
		}
	}
	if !c.reuse {
		if err := ev.Close(); err != nil {
			t.Errorf("FdEvent.Close after the raw close: %v", err)
		}
	}
	before := h1
	r2, _ := relTakeNumber(t, n)
	h2 := 0
	relAddFd(t, l, r2.fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { h2++ })
	run = relRunFor(t, l, period)
	t.Logf("new pipe on fd %d: h2 ran %d times, h1 %d times, in %d Onces (%v CPU), Once errors %v", n, h2, h1-before, run.onces, run.cpu, run.errs)
	if h2 != 0 {
		t.Errorf("the handler of a new, empty pipe on fd %d ran %d times, want never", n, h2)
	}
	if h1 != before {
		t.Errorf("the first handler ran %d times after the new file on fd %d was watched, want never", h1-before, n)
	}
	if !run.asleep(period, 3) || len(run.errs) > 0 {
		t.Errorf("the loop ran %d Onces using %v of CPU (errors %v) before its %v timer, want it asleep (at most 3 Onces, under %v, no error)", run.onces, run.cpu, run.errs, period, period/10)
	}
}

// relWaitSyscalls are the system calls a loop blocks in: ppoll (poll), epoll_pwait2 or
// epoll_pwait (epoll), io_uring_enter (uring, uring-poll).
var relWaitSyscalls = map[int]string{unix.SYS_PPOLL: "ppoll", unix.SYS_EPOLL_PWAIT2: "epoll_pwait2",
	unix.SYS_EPOLL_PWAIT: "epoll_pwait", unix.SYS_IO_URING_ENTER: "io_uring_enter"}

// relBlockedIn returns the wait system call thread tid is blocked in ("" if it is not), from
// /proc/self/task/TID/syscall (the number of the call a sleeping thread is in) and .../stat
// (state S).
func relBlockedIn(tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return ""
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return ""
	}
	// The state follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(st), ')'); i < 0 || !strings.HasPrefix(string(st[i:]), ") S") {
		return ""
	}
	return relWaitSyscalls[nr]
}

// relPeerEOF reads the nonblocking socket peer until it reads end of file (or ECONNRESET: the
// other end is gone too) or within passes; it reports whether it did, and when.
func relPeerEOF(peer int, within time.Duration) (bool, time.Duration) {
	start := time.Now()
	var buf [256]byte
	for {
		n, err := unix.Read(peer, buf[:])
		if err == nil && n == 0 || err == unix.ECONNRESET {
			return true, time.Since(start)
		}
		if err == nil || err == unix.EINTR {
			continue
		}
		if time.Since(start) >= within {
			return false, time.Since(start)
		}
		fds := []unix.PollFd{{Fd: int32(peer), Events: unix.POLLIN}}
		unix.Poll(fds, 10)
	}
}

// relBlockedClose is one run of TestRawCloseWhileBlockedReleasesFile.
type relBlockedClose struct {
	blockedIn string        // the wait the loop slept in when the socket was closed
	stillIn   string        // the wait it slept in after the EOF check ("": it had woken)
	eof       bool          // the peer read EOF during the check
	took      time.Duration // how long the check took
	runErr    error         // what Run returned after Stop
	peer      int
	loop      *ringev.Loop // closed at cleanup unless the caller closed it
}

// relCloseWhileBlocked makes a socketpair, watches one end for Read on a new loop on backend,
// and runs the loop (a 5 s timer would stop it); another goroutine waits until the loop's
// thread sleeps in its wait system call, closes the watched end with close(2), reads the peer
// for EOF for up to within, looks whether the loop still sleeps, and calls Stop.
func relCloseWhileBlocked(t *testing.T, backend string, within time.Duration) relBlockedClose {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	a, peer := relOwn(t, fds[0]), relOwn(t, fds[1])
	l := relNewLoop(t, backend)
	relAddFd(t, l, a.fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { t.Error("the handler of the closed socket ran") })
	l.AddTimer(5*time.Second, func(*ringev.Timer) { l.Stop() })
	tid := unix.Gettid() // New locked this goroutine to its thread
	res := make(chan relBlockedClose, 1)
	go func() {
		r := relBlockedClose{peer: peer.fd, loop: l}
		for start := time.Now(); r.blockedIn == "" && time.Since(start) < relDeadline; time.Sleep(time.Millisecond) {
			r.blockedIn = relBlockedIn(tid)
		}
		if r.blockedIn != "" {
			a.Close() // close(2) behind the loop's back, while it sleeps
			r.eof, r.took = relPeerEOF(peer.fd, within)
			r.stillIn = relBlockedIn(tid)
		}
		res <- r
		l.Stop() // wakes the loop (poll: its ppoll returns)
	}()
	runErr := l.Run()
	r := <-res
	r.runErr = runErr
	t.Logf("%s: the loop slept in %q; peer EOF %v after %v; then the loop slept in %q; Run returned %v", backend, r.blockedIn, r.eof, r.took.Round(time.Microsecond), r.stillIn, r.runErr)
	if r.blockedIn == "" {
		t.Fatalf("the loop's thread never slept in its wait within %v", relDeadline)
	}
	return r
}

// TestRawCloseWhileBlockedReleasesFile (issue 11 item 2): the loop is blocked in Run watching a
// socket for Read; another goroutine, once the loop's thread sleeps in its wait system call,
// closes the socket with close(2). On uring and epoll the peer reads EOF at once (within 1 s,
// while the loop still sleeps). On poll it does not while the loop sleeps: a sleeping ppoll
// holds a reference to every file it polls (the documented behaviour); the peer reads EOF as
// soon as something wakes the loop (here Stop), whose Once then reports the invalid fd (an
// error wrapping EBADF). On uring-poll, which is not close-safe, the pending POLL_ADD keeps the
// file even then, until the loop is closed. A run in which something else woke the loop
// before the check was over (the Go runtime's preemption signal can end a ppoll with EINTR)
// shows nothing and is repeated, up to 5 times.
func TestRawCloseWhileBlockedReleasesFile(t *testing.T) {
	for _, b := range ringev.Backends() {
		t.Run(b, func(t *testing.T) {
			within := time.Second
			if b == "poll" || b == "uring-poll" {
				within = 300 * time.Millisecond // long enough to show that EOF does not come
			}
			var r relBlockedClose
			for try := 0; ; try++ {
				r = relCloseWhileBlocked(t, b, within)
				if r.stillIn != "" || r.eof && (b == "uring" || b == "epoll") {
					break
				}
				if try == 4 {
					t.Fatalf("in 5 runs something woke the loop before the check was over")
				}
			}
			switch b {
			case "uring", "epoll":
				if !r.eof {
					t.Errorf("the peer read no EOF within %v of the close(2) while the loop slept in %s", r.took, r.blockedIn)
				}
				if r.runErr != nil {
					t.Errorf("Run: %v", r.runErr)
				}
				return
			}
			if r.eof {
				t.Errorf("the peer read EOF %v after the close(2) while the loop slept in %s; %s is documented to hold the file until its wait returns: the doc or the test is out of date", r.took, r.blockedIn, b)
			}
			if b == "poll" {
				if !errors.Is(r.runErr, unix.EBADF) {
					t.Errorf("Run after the wake-up: %v, want an error wrapping EBADF (POLLNVAL)", r.runErr)
				}
				if ok, took := relPeerEOF(r.peer, time.Second); !ok {
					t.Errorf("poll: the peer read no EOF within %v after the loop woke", took)
				}
				return
			}
			// uring-poll
			if ok, _ := relPeerEOF(r.peer, 100*time.Millisecond); ok {
				t.Errorf("uring-poll: the peer read EOF after the wake-up; uring-poll is documented to pin the file until the loop closes")
			}
			if err := r.loop.Close(); err != nil {
				t.Errorf("Loop.Close: %v", err)
			}
			if ok, took := relPeerEOF(r.peer, time.Second); !ok {
				t.Errorf("uring-poll: the peer read no EOF within %v after Loop.Close", took)
			}
		})
	}
}

// relEnterChildEnv switches the test binary, re-executed by TestAutoFallsBackWhenIoUringEnterDenied,
// into the child that denies io_uring_enter to itself.
const relEnterChildEnv = "RINGEV_TEST_REL_DENY_ENTER"

// relDenySyscall installs a seccomp filter on every thread of the process (TSYNC) that makes
// system call nr fail with errno and allows every other call.
func relDenySyscall(nr uint32, errno unix.Errno) error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("no seccomp audit arch for GOARCH %s", runtime.GOARCH)
	}
	const offNr, offArch = 0, 4 // struct seccomp_data: int nr; __u32 arch; ...
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArch},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 3, K: arch}, // another arch: allow
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNr},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: nr},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", e)
	}
	return nil
}

// TestAutoFallsBackWhenIoUringEnterDenied (issue 11 item 4): io_uring_setup works but
// io_uring_enter fails with EPERM (a seccomp filter that denies it alone, installed by a child
// process: the test re-executes its own binary). "auto" must not accept a backend whose first
// wait would fail: it chooses epoll, and BackendReason names io_uring_enter; WithBackend("uring")
// and ("uring-poll") fail in New with an error that names io_uring_enter and wraps EPERM.
func TestAutoFallsBackWhenIoUringEnterDenied(t *testing.T) {
	if os.Getenv(relEnterChildEnv) != "" {
		relDenyEnterChild()
		return
	}
	if l, err := ringev.New(ringev.WithBackend("uring")); err != nil {
		t.Skipf("the uring backend does not work here even without the filter: %v", err)
	} else {
		l.Close()
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAutoFallsBackWhenIoUringEnterDenied$", "-test.count=1", "-test.v", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), relEnterChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	res := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "RELENTER "); ok {
			k, val, _ := strings.Cut(v, "=")
			res[k] = val
		}
	}
	if s := res["seccomp"]; s != "installed" {
		if strings.HasPrefix(s, "unavailable") {
			t.Skipf("the child cannot install a seccomp filter here: %s", s)
		}
		t.Fatalf("the child did not install its filter:\n%s", out)
	}
	t.Logf("child: %v", res)
	if res["auto"] != "epoll" {
		t.Errorf("auto chose %q with io_uring_enter denied, want epoll", res["auto"])
	}
	if r := res["auto-reason"]; !strings.Contains(r, "io_uring_enter") || !strings.Contains(r, unix.EPERM.Error()) {
		t.Errorf("BackendReason %q does not name io_uring_enter and its error (%s)", r, unix.EPERM.Error())
	}
	for _, name := range []string{"uring", "uring-poll"} {
		if e := res[name+"-err"]; !strings.Contains(e, "io_uring_enter") {
			t.Errorf("New(WithBackend(%q)) with io_uring_enter denied: error %q, want one naming io_uring_enter", name, e)
		}
		if res[name+"-wraps"] != "true" {
			t.Errorf("New(WithBackend(%q)): the error does not wrap EPERM (errors.Is)", name)
		}
	}
	if res["epoll"] != "ok" {
		t.Errorf("New(WithBackend(\"epoll\")) in the child: %s", res["epoll"])
	}
}

// relDenyEnterChild is the child's side: deny io_uring_enter, create loops, print the results.
func relDenyEnterChild() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := relDenySyscall(unix.SYS_IO_URING_ENTER, unix.EPERM); err != nil {
		fmt.Printf("RELENTER seccomp=unavailable: %v\n", err)
		return
	}
	fmt.Println("RELENTER seccomp=installed")
	if l, err := ringev.New(); err != nil {
		fmt.Printf("RELENTER auto=error: %v\n", err)
	} else {
		fmt.Printf("RELENTER auto=%s\nRELENTER auto-reason=%s\n", l.Backend(), l.BackendReason())
		l.Close()
	}
	for _, name := range []string{"uring", "uring-poll"} {
		l, err := ringev.New(ringev.WithBackend(name))
		if err == nil {
			l.Close()
		}
		fmt.Printf("RELENTER %s-err=%v\nRELENTER %s-wraps=%v\n", name, err, name, errors.Is(err, unix.EPERM))
	}
	if l, err := ringev.New(ringev.WithBackend("epoll")); err != nil {
		fmt.Printf("RELENTER epoll=%v\n", err)
	} else {
		fmt.Println("RELENTER epoll=ok")
		l.Close()
	}
}

// relRequeuer is a handler kind that re-queues itself from its own run: a zero-delay timer, an
// immediate, a posted function.
type relRequeuer struct {
	name  string
	start func(l *ringev.Loop, ran *int)
}

var relRequeuers = []relRequeuer{
	{"timer", func(l *ringev.Loop, ran *int) {
		var h func(*ringev.Timer)
		h = func(*ringev.Timer) { *ran++; l.AddTimer(0, h) }
		l.AddTimer(0, h)
	}},
	{"immediate", func(l *ringev.Loop, ran *int) {
		var h func()
		h = func() { *ran++; l.AddImmediate(h) }
		l.AddImmediate(h)
	}},
	{"posted", func(l *ringev.Loop, ran *int) {
		var h func()
		h = func() { *ran++; l.Post(h) }
		l.Post(h)
	}},
}

// TestRequeuingHandlerDoesNotStarveFds (issue 11 item 6): a zero-delay timer re-added from its
// own handler (or an immediate, or a posted function, that re-queues itself) and a pipe that
// stays readable; 1,000 Onces. The first Once keeps tevent's order (the timer, immediate or
// posted function runs before the fd handler), but at most FdStarvationLimit Onces in a row run
// it while the fd is ready: the fd handler runs at least 1,000/(FdStarvationLimit+1) times, and
// every Once runs one handler. Every backend and dispatch mode.
func TestRequeuingHandlerDoesNotStarveFds(t *testing.T) {
	const onces = 1000
	k := ringev.FdStarvationLimit
	for _, b := range ringev.Backends() {
		for _, m := range relModes {
			for _, q := range relRequeuers {
				t.Run(b+"/"+m.name+"/"+q.name, func(t *testing.T) {
					r, w := relPipe(t)
					l := relNewLoop(t, b, m.opts...)
					fdRuns, otherRuns := 0, 0
					relAddFd(t, l, r.fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { fdRuns++ }) // never drained
					testutil.Write(t, w.fd, []byte{'x'})
					q.start(l, &otherRuns)
					gap, maxGap, firstFd := 0, 0, -1
					for i := 0; i < onces; i++ {
						before := fdRuns
						testutil.Once(t, l, relDeadline)
						if fdRuns > before {
							if firstFd < 0 {
								firstFd = i
							}
							gap = 0
						} else {
							gap++
							maxGap = max(maxGap, gap)
						}
					}
					t.Logf("%d Onces: %d fd handler runs (the first in Once %d), %d %s runs, at most %d Onces in a row without the fd", onces, fdRuns, firstFd, otherRuns, q.name, maxGap)
					if firstFd == 0 {
						t.Errorf("the first Once ran the fd handler; tevent's order runs the %s first", q.name)
					}
					if want := onces / (k + 1); fdRuns < want {
						t.Errorf("the fd handler ran %d times in %d Onces, want at least %d (FdStarvationLimit %d)", fdRuns, onces, want, k)
					}
					if maxGap > k {
						t.Errorf("%d Onces in a row ran no fd handler while the fd was readable, want at most FdStarvationLimit (%d)", maxGap, k)
					}
					if fdRuns+otherRuns != onces {
						t.Errorf("%d Onces ran %d handlers, want one each", onces, fdRuns+otherRuns)
					}
				})
			}
		}
	}
}

// relTCPPair returns the two ends of a TCP connection over loopback, both nonblocking, owned
// by the test.
func relTCPPair(t *testing.T) (client, server *relFd) {
	t.Helper()
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		t.Fatalf("listen: %v", err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	client = relOwn(t, c)
	if err := unix.Connect(c, sa); err != nil {
		t.Fatalf("connect: %v", err)
	}
	s, _, err := unix.Accept4(ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatalf("accept4: %v", err)
	}
	server = relOwn(t, s)
	if err := unix.SetNonblock(c, true); err != nil {
		t.Fatalf("set nonblocking: %v", err)
	}
	return client, server
}

// relFlagsSeen watches fd with flags on l and returns a pointer to the flags of the handler's
// last call and to its call count; the handler disarms itself (flags 0), so it runs once per
// SetFlags.
func relFlagsSeen(t *testing.T, l *ringev.Loop, fd int, flags ringev.Flags) (*ringev.FdEvent, *ringev.Flags, *int) {
	t.Helper()
	var got ringev.Flags
	calls := 0
	ev := relAddFd(t, l, fd, flags, func(ev *ringev.FdEvent, f ringev.Flags) {
		got = f
		calls++
		if err := ev.SetFlags(0); err != nil {
			t.Errorf("SetFlags(0): %v", err)
		}
	})
	return ev, &got, &calls
}

// relUntilCalled runs the loop until *calls > 0 or a timer of d fires, and reports whether the
// handler was called.
func relUntilCalled(t *testing.T, l *ringev.Loop, calls *int, d time.Duration) bool {
	t.Helper()
	fired := false
	tm := l.AddTimer(d, func(*ringev.Timer) { fired = true })
	testutil.OnceUntil(t, l, func() bool { return *calls > 0 || fired }, relDeadline)
	tm.Stop()
	return *calls > 0
}

// TestHalfCloseReportsError (issue 11 item 6b): the peer of a TCP connection over loopback
// shuts down its writing side (shutdown(SHUT_WR), a half-close). As in tevent (which asks for
// POLLRDHUP with TEVENT_FD_READ and TEVENT_FD_ERROR and reports TEVENT_FD_ERROR on it), a
// handler that watches only Error wakes with Error, one that watches Read|Error gets Read|Error,
// one that watches Read gets Read; a handler that watches Write alone keeps its Write flag (the
// socket is still writable) and is still told so, also beside a Read|Error handler of the same
// fd (the fd is then watched for POLLRDHUP). None of them is called before the shutdown. Every
// backend.
func TestHalfCloseReportsError(t *testing.T) {
	for _, b := range ringev.Backends() {
		for _, c := range []struct {
			watch, want ringev.Flags
			beside      ringev.Flags // another handler on the same fd (0: none)
		}{
			{ringev.Error, ringev.Error, 0},
			{ringev.Read | ringev.Error, ringev.Read | ringev.Error, 0},
			{ringev.Read, ringev.Read, 0},
			{ringev.Write, ringev.Write, 0},
			{ringev.Write, ringev.Write, ringev.Read | ringev.Error}, // the fd is watched for POLLRDHUP
		} {
			name := b + "/" + c.watch.String()
			if c.beside != 0 {
				name += "/beside-" + c.beside.String()
			}
			t.Run(name, func(t *testing.T) {
				client, server := relTCPPair(t)
				l := relNewLoop(t, b)
				if c.beside != 0 {
					relAddFd(t, l, server.fd, c.beside, func(*ringev.FdEvent, ringev.Flags) {})
				}
				ev, got, calls := relFlagsSeen(t, l, server.fd, c.watch)
				if c.watch != ringev.Write {
					if relUntilCalled(t, l, calls, 20*time.Millisecond) {
						t.Fatalf("the handler was called with %v before the peer's shutdown", *got)
					}
				}
				if err := unix.Shutdown(client.fd, unix.SHUT_WR); err != nil {
					t.Fatalf("shutdown(SHUT_WR): %v", err)
				}
				*calls = 0
				if c.watch == ringev.Write {
					// It ran before the shutdown (writable) and disarmed itself: re-arm it.
					if err := ev.SetFlags(ringev.Write); err != nil {
						t.Fatalf("SetFlags(Write): %v", err)
					}
				}
				if !relUntilCalled(t, l, calls, time.Second) {
					t.Fatalf("a %v handler was not called within 1 s of the peer's shutdown(SHUT_WR)", c.watch)
				}
				if *got != c.want {
					t.Errorf("a %v handler got %v after the peer's shutdown(SHUT_WR), want %v", c.watch, *got, c.want)
				}
				if c.watch == ringev.Write && *got == ringev.Write {
					// The handler disarmed itself; it kept Write until then (the error rule would
					// have cleared it before the call). Once more, to see that it still comes.
					if err := ev.SetFlags(ringev.Write); err != nil {
						t.Fatalf("SetFlags(Write): %v", err)
					}
					*calls = 0
					if !relUntilCalled(t, l, calls, time.Second) {
						t.Errorf("a Write handler was not called again on the half-closed (still writable) socket")
					}
				}
			})
		}
	}
}

// TestPeerCloseFlags (issue 11 item 6b): the peer of an AF_UNIX socketpair closes. Each handler
// gets the flags it watches among Read, Error, and Write when the kernel reports the socket
// writable too (POLLOUT, as poll(2) on it says here) — tevent's poll backend does the same —
// except a handler that watches Write alone: it is not called and loses its Write flag. Every
// backend.
func TestPeerCloseFlags(t *testing.T) {
	masks := []ringev.Flags{ringev.Read, ringev.Write, ringev.Error, ringev.Read | ringev.Write,
		ringev.Write | ringev.Error, ringev.Read | ringev.Error, ringev.Read | ringev.Write | ringev.Error}
	for _, b := range ringev.Backends() {
		for _, m := range masks {
			t.Run(b+"/"+m.String(), func(t *testing.T) {
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatalf("socketpair: %v", err)
				}
				a, peer := relOwn(t, fds[0]), relOwn(t, fds[1])
				l := relNewLoop(t, b)
				ev, got, calls := relFlagsSeen(t, l, a.fd, m)
				if m&ringev.Write != 0 {
					// Writable from the start: let it run once, then re-arm it.
					if !relUntilCalled(t, l, calls, time.Second) {
						t.Fatalf("a %v handler was not called on a writable socket", m)
					}
					*calls, *got = 0, 0
					if err := ev.SetFlags(m); err != nil {
						t.Fatalf("SetFlags: %v", err)
					}
				}
				if err := peer.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				pfd := []unix.PollFd{{Fd: int32(a.fd), Events: unix.POLLIN | unix.POLLOUT}}
				if _, err := unix.Poll(pfd, 0); err != nil {
					t.Fatalf("poll: %v", err)
				}
				want := m & (ringev.Read | ringev.Error)
				if pfd[0].Revents&unix.POLLOUT != 0 && want != 0 {
					want |= m & ringev.Write
				}
				called := relUntilCalled(t, l, calls, 100*time.Millisecond)
				t.Logf("revents %#x: a %v handler got %v (called %v), flags now %v", pfd[0].Revents, m, *got, called, ev.Flags())
				if want == 0 {
					if called {
						t.Errorf("a Write-only handler was called with %v on hang-up, want not called", *got)
					}
					if ev.Flags() != 0 {
						t.Errorf("a Write-only handler kept flags %v on hang-up, want Write cleared", ev.Flags())
					}
					return
				}
				if !called || *got != want {
					t.Errorf("a %v handler got %v (called %v) on hang-up, want %v", m, *got, called, want)
				}
			})
		}
	}
}
