//go:build linux

package testutil

// The fd, socket and thread helpers of the tests: fds at given numbers, full pipes and
// sockets, a file's release, the process's open fds, TCP pairs, and a thread asleep in its wait
// or waiting for a CPU.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Deadline bounds every wait of the tests. It is generous on purpose: it only turns a hang into
// a failure, it is not a performance bound.
const Deadline = 5 * time.Second

// ReleaseWithin is how soon a socket's peer must read EOF after the last close of the other end
// (loop contract item 5: the file is really released).
const ReleaseWithin = 100 * time.Millisecond

// Renumber moves fd, which the test owns, to fd number num with dup3(2) (closing whatever had
// num) and closes fd's old number; the result is owned by the test.
func Renumber(t testing.TB, fd, num int) int {
	t.Helper()
	if err := unix.Dup3(fd, num, unix.O_CLOEXEC); err != nil {
		t.Fatalf("dup3(%d, %d): %v", fd, num, err)
	}
	Close(t, fd)
	return Own(t, num)
}

// SocketpairAt is Socketpair whose first end has fd number num (just freed): the
// kernel hands out the lowest free number, and if something else took it meanwhile the end is
// moved there with dup3(2). It reports whether the number was reused without dup3.
func SocketpairAt(t testing.TB, num int) (a, b int, natural bool) {
	t.Helper()
	a, b = Socketpair(t)
	switch num {
	case a:
		return a, b, true
	case b: // the kernel gave the free number to the other end: swap roles
		return b, a, true
	}
	return Renumber(t, a, num), b, false
}

// PipeAt is Pipe whose read end has fd number num (just freed), as SocketpairAt. The
// returned ends are the test's: the caller hands r over if the loop auto-closes it.
func PipeAt(t testing.TB, num int) (r, w int, natural bool) {
	t.Helper()
	r, w = Pipe(t)
	if r == num {
		return r, w, true
	}
	if w == num { // move the write end out of the way first
		fd, err := unix.FcntlInt(uintptr(w), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("F_DUPFD_CLOEXEC: %v", err)
		}
		Close(t, w)
		w = Own(t, fd)
	}
	return Renumber(t, r, num), w, false
}

// Pipes makes n nonblocking Pipes (Pipe), each with one unread byte when filled.
func Pipes(t testing.TB, n int, filled bool) (rs, ws []int) {
	t.Helper()
	for range n {
		r, w := Pipe(t)
		if filled {
			Write(t, w, []byte{'x'})
		}
		rs = append(rs, r)
		ws = append(ws, w)
	}
	return rs, ws
}

// Fill writes to the nonblocking pipe or socket fd until even a one-byte write gets EAGAIN, and
// returns how many bytes it holds.
func Fill(t testing.TB, fd int) int {
	t.Helper()
	chunk := make([]byte, 4096)
	total := 0
	for len(chunk) > 0 {
		n, err := unix.Write(fd, chunk)
		switch {
		case err == unix.EAGAIN:
			chunk = chunk[:len(chunk)/2]
		case err != nil:
			t.Fatalf("filling fd %d: %v", fd, err)
		case total > 64<<20:
			t.Fatalf("fd %d took %d bytes and does not Fill up", fd, total)
		default:
			total += n
		}
	}
	return total
}

// OpenFds lists the process's open fd numbers (/proc/self/fd, without the fd of the listing).
func OpenFds(t testing.TB) []string {
	t.Helper()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatalf("listing open fds: %v", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	self := strconv.Itoa(int(d.Fd()))
	names = slices.DeleteFunc(names, func(n string) bool { return n == self })
	slices.Sort(names)
	return names
}

// FdsSince returns the fds open now that were not in before (a list of OpenFds), leaving out
// those closed meanwhile.
func FdsSince(t testing.TB, before []string) []int {
	t.Helper()
	var fds []int
	for _, name := range OpenFds(t) {
		fd, err := strconv.Atoi(name)
		if err != nil {
			t.Fatalf("/proc/self/fd lists %q", name)
		}
		if !slices.Contains(before, name) && !IsClosed(fd) {
			fds = append(fds, fd)
		}
	}
	return fds
}

// IsClosed reports whether fd is not open (fcntl F_GETFD fails with EBADF).
func IsClosed(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == unix.EBADF
}

// ClosedFdNumber returns an fd number that is not open.
func ClosedFdNumber(t testing.TB) int {
	t.Helper()
	for fd := 4000; fd < 5000; fd++ {
		if IsClosed(fd) {
			return fd
		}
	}
	t.Fatal("no closed fd number between 4000 and 5000")
	return -1
}

// PeerEOF waits up to within (0: one look) for a nonblocking read on peer to report that the
// other end's file is released (EOF, or ECONNRESET when it was closed with unread data),
// discarding data. It returns whether it was, how long that took, and what the last read
// returned.
func PeerEOF(peer int, within time.Duration) (bool, time.Duration, string) {
	start := time.Now()
	end := start.Add(within)
	var buf [4096]byte
	for {
		n, err := unix.Read(peer, buf[:])
		switch {
		case err == nil && n == 0:
			return true, time.Since(start), "EOF"
		case err == unix.ECONNRESET:
			return true, time.Since(start), "ECONNRESET"
		case err == nil, err == unix.EINTR:
			continue // data the other end had written: read on to EOF
		case err != unix.EAGAIN:
			return false, time.Since(start), fmt.Sprintf("read error %v", err)
		}
		rem := time.Until(end)
		if rem <= 0 {
			return false, time.Since(start), "EAGAIN (the other end's file is still open)"
		}
		ms := int((rem + time.Millisecond - 1) / time.Millisecond)
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(peer), Events: unix.POLLIN}}, ms)
	}
}

// ExpectEOF fails the test unless peer reads EOF within the given time (0: at once): the other
// end's file was really released.
func ExpectEOF(t testing.TB, peer int, within time.Duration, what string) {
	t.Helper()
	if ok, _, last := PeerEOF(peer, within); !ok {
		when := "at once"
		if within > 0 {
			when = "within " + within.String()
		}
		t.Fatalf("%s: the peer did not read EOF %s (last read: %s): the file was not released", what, when, last)
	}
}

// ExpectPinned asserts a documented pin: the file stays open (the peer reads no EOF within
// ReleaseWithin) because the kernel holds a reference to it (uring-poll's pending
// IORING_OP_POLL_ADD, or a request in flight on uring).
func ExpectPinned(t testing.TB, peer int, what string) {
	t.Helper()
	if ok, took, _ := PeerEOF(peer, ReleaseWithin); ok {
		t.Fatalf("%s: the peer read EOF after %v, but the file is documented to stay open here (the kernel holds it); the doc or the test is out of date", what, took)
	}
}

// RunWait returns how long the thread tid of this process has waited for a CPU so far: the
// second field of /proc/self/task/TID/schedstat (ns on a run queue). A timing a test asserts on
// a loaded machine subtracts it, so that it measures the loop, not the machine's other load.
// Safe from any goroutine: a failure to read it fails the test (Error) and counts as 0.
func RunWait(t testing.TB, tid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
	var f []string
	var ns int64
	if err == nil {
		if f = strings.Fields(string(b)); len(f) < 2 {
			err = fmt.Errorf("%q has no second field", b)
		} else {
			ns, err = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if err != nil {
		t.Errorf("reading the run-queue wait of thread %d: %v", tid, err)
		return 0
	}
	return time.Duration(ns)
}

// ThreadCPU is the CPU time (user+system) used so far by the calling OS thread. The loop's
// goroutine is locked to its thread, so this is the loop's own CPU time.
func ThreadCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatalf("getrusage(RUSAGE_THREAD): %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TempFile creates an empty regular file in the test's temporary directory; it is closed at
// cleanup (after a loop created before it is closed).
func TempFile(t testing.TB) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TCPSocket is a non-blocking, close-on-exec IPv4 TCP socket owned by the test.
func TCPSocket(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return Own(t, fd)
}

// UDPSocket is a non-blocking, close-on-exec UDP socket owned by the test, bound to 127.0.0.1
// on any port; it returns the socket and its address.
func UDPSocket(t testing.TB) (int, *unix.SockaddrInet4) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd = Own(t, fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4)
}

// Dial connects a blocking client socket, owned by the test, to sa (the Listener's backlog
// completes it).
func Dial(t testing.TB, sa *unix.SockaddrInet4) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	Own(t, fd)
	if err := unix.Connect(fd, sa); err != nil {
		t.Fatal(err)
	}
	return fd
}

// Listener returns a non-blocking TCP Listener on 127.0.0.1 and its address.
func Listener(t testing.TB) (int, *unix.SockaddrInet4) {
	t.Helper()
	fd := TCPSocket(t)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4)
}

// TCPPair returns the two ends of a TCP connection over loopback, both nonblocking and owned
// by the test: the dialled client and the accepted server. With buf > 0 the client's receive
// buffer and the server's send buffer are fixed at buf bytes (no autotuning), so that a full
// send queue on the server stays full until the client reads.
func TCPPair(t testing.TB, buf int) (client, server int) {
	t.Helper()
	lfd, sa := Listener(t)
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	client = Own(t, c)
	if buf > 0 {
		if err := unix.SetsockoptInt(c, unix.SOL_SOCKET, unix.SO_RCVBUF, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Connect(c, sa); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := unix.SetNonblock(c, true); err != nil {
		t.Fatal(err)
	}
	pfd := []unix.PollFd{{Fd: int32(lfd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, int(Deadline/time.Millisecond)); n != 1 {
		t.Fatalf("the Listener has no connection to accept within %v (poll: %d, %v)", Deadline, n, err)
	}
	s, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatalf("accept4: %v", err)
	}
	server = Own(t, s)
	if buf > 0 {
		if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_SNDBUF, buf); err != nil {
			t.Fatal(err)
		}
	}
	return client, server
}

// waitSyscalls are the system calls a loop blocks in: ppoll (poll), epoll_pwait2 or
// epoll_pwait (epoll), io_uring_enter (uring, uring-poll).
var waitSyscalls = map[int]string{unix.SYS_PPOLL: "ppoll", unix.SYS_EPOLL_PWAIT2: "epoll_pwait2",
	unix.SYS_EPOLL_PWAIT: "epoll_pwait", unix.SYS_IO_URING_ENTER: "io_uring_enter"}

// BlockedIn returns the wait system call thread tid is blocked in ("" if it is not), from
// /proc/self/task/TID/syscall (the number of the call a sleeping thread is in) and .../stat
// (state S).
func BlockedIn(tid int) string {
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
	return waitSyscalls[nr]
}

// PipeHolding returns a pipe whose read end holds data.
func PipeHolding(t testing.TB, data string) (r, w int) {
	t.Helper()
	r, w = Pipe(t)
	Write(t, w, []byte(data))
	return r, w
}

// ExpectHeld reads the pipe's read end r and fails unless it holds exactly data.
func ExpectHeld(t testing.TB, r int, data string) {
	t.Helper()
	buf := make([]byte, 64)
	n, err := unix.Read(r, buf)
	if err != nil || string(buf[:n]) != data {
		t.Fatalf("the pipe holds %q (err %v), want %q: the cancelled request read from it", buf[:max(n, 0)], err, data)
	}
}

// HalfClosedFull returns a socketpair whose first end's send queue is full and whose peer has
// shut down its writing side: a Write event on a waits (on uring-poll with a multishot poll).
func HalfClosedFull(t testing.TB) (a, peer int) {
	t.Helper()
	a, peer = Socketpair(t)
	Fill(t, a)
	if err := unix.Shutdown(peer, unix.SHUT_WR); err != nil {
		t.Fatalf("shutdown(SHUT_WR): %v", err)
	}
	return a, peer
}

// AwaitWoken waits for done after a Post or a Stop, which must wake the loop whose thread is
// tid and whose wake-up eventfd is wakeFd (the Post's function runs, or Run returns, before the
// loop blocks again), and returns "" when done comes. A wake-up is lost when the loop's thread
// is seen asleep in its wait (BlockedIn) with no wake-up pending on its eventfd (a count of 0:
// none was written, or the loop has drained it) and done has still not come: it returns that.
// (A written eventfd reaches some waits through the kernel a little later: a thread asleep
// with the count set is not counted as lost.) If done does not come within the Deadline, it
// returns that.
func AwaitWoken(tid, wakeFd int, done <-chan struct{}) (problem string) {
	end := time.Now().Add(Deadline)
	for {
		select {
		case <-done:
			return ""
		default:
		}
		// The count first: a count of 0 read before the thread is seen asleep means that no
		// wake-up was pending when it slept.
		count, err := eventfdCount(wakeFd)
		if err != nil {
			return err.Error()
		}
		if in := BlockedIn(tid); in != "" && count == 0 {
			select {
			case <-done: // served, and asleep again since
				return ""
			default:
			}
			return fmt.Sprintf("the loop's thread sleeps in %s with no wake-up pending on its eventfd, without having served it: the wake-up was lost", in)
		}
		if time.Now().After(end) {
			return fmt.Sprintf("not served within %v", Deadline)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// eventfdCount returns the count of this process's eventfd fd, without reading it
// (/proc/self/fdinfo/FD's eventfd-count, in hexadecimal).
func eventfdCount(fd int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return 0, fmt.Errorf("reading the eventfd count of fd %d: %w", fd, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "eventfd-count:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("fd %d is not an eventfd: %q", fd, b)
}

// WhenBlocked calls f on a new goroutine once the thread tid (a loop's: New locks its caller to
// its thread) sleeps in its wait system call (BlockedIn), looked at every 100 µs, and returns a
// channel closed when f has returned. If the thread has not slept within the Deadline, the test
// fails and f is called all the same, so that the loop ends.
func WhenBlocked(t testing.TB, tid int, f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		end := time.Now().Add(Deadline)
		for BlockedIn(tid) == "" {
			if time.Now().After(end) {
				t.Errorf("thread %d did not sleep in its wait within %v", tid, Deadline)
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		f()
	}()
	return done
}
