//go:build linux

package ringev_test

// Tests of closing a registered fd (CloseFd, auto-close, Loop.Close, close(2) after Loop.Close):
// the file is released and a new file on the number gets the requests.

import (
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// TestRegisteredFileReleasedByCloseFd: CloseFd on a registered fd with a Read in flight cancels
// it, empties the fd's slot and closes it: the pipe's writer then gets EPIPE. On epoll and poll
// RegisterFile does nothing and the same holds.
func TestRegisteredFileReleasedByCloseFd(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		if backend == "uring" {
			requireRegisteredFiles(t)
		}
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		if err := l.RegisterFile(r); err != nil {
			t.Fatal(err)
		}
		var rd, cls recorder
		must(t)(l.Read(r, make([]byte, 4), -1, rd.cb, 0))
		untilWaited(t, l)
		must(t)(l.CloseFd(r, cls.cb, 0))
		until(t, l, func() bool { return cls.n() > 0 && rd.n() > 0 })
		wantOne(t, &cls, 0)
		if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
			t.Fatalf("write after CloseFd of the registered read end: %v, want EPIPE (the file released)", err)
		}
	})
}

// TestRegisteredFileReleasedByLoopCloseAtOnce: Loop.Close empties the registered-file table
// before it returns (the kernel's own teardown of the ring comes later): a registered read end
// closed with a plain close(2), and one with a Read still in the kernel, are released when
// Close returns (their pipes' writers get EPIPE at once).
func TestRegisteredFileReleasedByLoopCloseAtOnce(t *testing.T) {
	requireRegisteredFiles(t)
	r1, w1 := testutil.Pipe(t)
	r2, w2 := testutil.Pipe(t)
	l := newLoop(t, "uring")
	for _, fd := range []int{r1, r2} {
		if err := l.RegisterFile(fd); err != nil {
			t.Fatal(err)
		}
	}
	var rec recorder
	must(t)(l.Read(r2, make([]byte, 4), -1, rec.cb, 0))
	untilWaited(t, l) // the Read waits in the kernel
	for _, fd := range []int{r1, r2} {
		if err := testutil.Close(t, fd); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeErr(w1); err != nil {
		t.Fatalf("write after close(2) of a registered read end, before Loop.Close: %v; the table should hold the file", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, w := range []int{w1, w2} {
		if err := writeErr(w); !errors.Is(err, unix.EPIPE) {
			t.Errorf("pipe %d: write right after Loop.Close: %v, want EPIPE (the registered read end released)", i+1, err)
		}
	}
}

// autoClosingRegistered returns a uring loop with a registered socket watched by an idle fd
// event with auto-close (the loop owns the number), and the socket's peer.
func autoClosingRegistered(t *testing.T) (*ringev.Loop, *ringev.FdEvent, int) {
	t.Helper()
	a, peer := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	ev := addFd(t, l, a, ringev.Read, never(t, "idle socket"))
	ev.SetAutoClose(true)
	testutil.HandOver(t, a)
	untilWaited(t, l) // the loop watches a
	return l, ev, peer
}

// TestRegisteredFileAutoClosedByItsFdEventIsReleased: an fd event with auto-close on a
// registered socket closes it (FdEvent.Close): the loop closes the number itself, so it must
// empty the slot too, else the table keeps the file and the peer never reads EOF.
func TestRegisteredFileAutoClosedByItsFdEventIsReleased(t *testing.T) {
	_, ev, peer := autoClosingRegistered(t)
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.ExpectEOF(t, peer, testutil.ReleaseWithin, "auto-close of a registered fd by FdEvent.Close")
}

// TestRegisteredFileAutoClosedThenNumberReusedReachesTheNewFile: after an fd event's auto-close
// of a registered fd, a new socket that takes the number gets the requests made on it (not the
// old socket the table would still hold).
func TestRegisteredFileAutoClosedThenNumberReusedReachesTheNewFile(t *testing.T) {
	a, oldPeer := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	var first recorder
	must(t)(l.Send(a, []byte("old"), 0, first.cb, 0)) // the loop knows the number
	until(t, l, func() bool { return first.n() > 0 })
	testutil.Drain(t, oldPeer)
	ev := addFd(t, l, a, ringev.Read, never(t, "idle socket"))
	ev.SetAutoClose(true)
	num := a
	testutil.HandOver(t, a)
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	_, newPeer, _ := testutil.SocketpairAt(t, num)
	var snd recorder
	must(t)(l.Send(num, []byte("new"), 0, snd.cb, 0))
	until(t, l, func() bool { return snd.n() > 0 })
	wantOne(t, &snd, 3)
	buf := make([]byte, 16)
	if k, err := unix.Read(newPeer, buf); err != nil || string(buf[:k]) != "new" {
		t.Fatalf("the new socket's peer read %q (err %v), want \"new\": the Send went to the old socket", buf[:max(k, 0)], err)
	}
}

// TestRegisteredFileWithCloseFdPendingAtLoopCloseIsReleasedAtOnce: Loop.Close while a CloseFd of
// a registered fd waits for its Recv closes the fd, and the peer reads EOF as soon as Close
// returns (as for an fd not registered: TestRequestLoopCloseFinishesPendingCloseFd).
func TestRegisteredFileWithCloseFdPendingAtLoopCloseIsReleasedAtOnce(t *testing.T) {
	a, peer := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	must(t)(l.Recv(a, make([]byte, 16), 0, func(*ringev.Completion) {}, 0))
	untilWaited(t, l)
	must(t)(l.CloseFd(a, func(*ringev.Completion) {}, 0))
	testutil.HandOver(t, a)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !testutil.IsClosed(a) {
		t.Fatal("Loop.Close left open the fd that CloseFd was closing")
	}
	testutil.ExpectEOF(t, peer, 0, "Loop.Close with a CloseFd of a registered fd pending")
}

// TestRegisteredFileClosedAfterLoopCloseIsReleasedAtOnce: Loop.Close lets go of the
// registered-file table: a close(2) of a registered fd after it releases the file at once (the
// peer reads EOF), as for an fd never registered.
func TestRegisteredFileClosedAfterLoopCloseIsReleasedAtOnce(t *testing.T) {
	a, peer := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	must(t)(l.Recv(a, make([]byte, 16), 0, func(*ringev.Completion) {}, 0))
	untilWaited(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Close(t, a); err != nil {
		t.Fatal(err)
	}
	testutil.ExpectEOF(t, peer, 0, "close(2) of a registered fd after Loop.Close")
}

// TestRegisteredFileAutoClosedByLoopCloseIsReleasedAtOnce: Loop.Close closes a registered fd
// whose fd event has auto-close; the peer reads EOF as soon as Close returns.
func TestRegisteredFileAutoClosedByLoopCloseIsReleasedAtOnce(t *testing.T) {
	l, _, peer := autoClosingRegistered(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.ExpectEOF(t, peer, 0, "Loop.Close auto-closing a registered fd")
}

// TestRegisteredFileCloseFdInFlightThenTheNumberReusedAndRegistered: CloseFd of a registered
// socket with a Recv and a Send in flight; a new socket takes the number and is registered
// again: requests on it reach the new socket (its peer gets the bytes, and what its peer writes
// arrives), and the old socket's peer read EOF.
func TestRegisteredFileCloseFdInFlightThenTheNumberReusedAndRegistered(t *testing.T) {
	a, oldPeer := testutil.Socketpair(t)
	if err := unix.SetsockoptInt(a, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, "uring")
	register(t, l, a)
	num := a
	var rcv, snd, cls recorder
	must(t)(l.Recv(num, make([]byte, 16), 0, rcv.cb, 0))
	must(t)(l.Send(num, make([]byte, 1<<20), 0, snd.cb, 0)) // short of room: in the kernel
	untilWaited(t, l)
	must(t)(l.CloseFd(num, cls.cb, 0))
	testutil.HandOver(t, a)
	until(t, l, func() bool { return cls.n() > 0 && rcv.n() > 0 && snd.n() > 0 })
	wantOne(t, &cls, 0)
	testutil.ExpectEOF(t, oldPeer, testutil.ReleaseWithin, "CloseFd of the registered socket")
	_, newPeer, _ := testutil.SocketpairAt(t, num)
	if err := l.RegisterFile(num); err != nil {
		t.Fatal(err)
	}
	var rcv2, snd2 recorder
	must(t)(l.Send(num, []byte("to-new"), 0, snd2.cb, 0))
	must(t)(l.Recv(num, make([]byte, 16), 0, rcv2.cb, 0))
	testutil.Write(t, newPeer, []byte("from-new"))
	until(t, l, func() bool { return snd2.n() > 0 && rcv2.n() > 0 })
	wantOne(t, &snd2, 6)
	if c := wantOne(t, &rcv2, 8); string(rcv2.bufs[0]) != "from-new" {
		t.Fatalf("recv on the new socket got %q (%+v)", rcv2.bufs[0], c)
	}
	buf := make([]byte, 16)
	if k, err := unix.Read(newPeer, buf); err != nil || string(buf[:k]) != "to-new" {
		t.Fatalf("the new socket's peer read %q (err %v), want \"to-new\"", buf[:max(k, 0)], err)
	}
}

// TestRegisteredFileAcceptMultishotThenCloseFd: an AcceptMultishot on a registered listener
// accepts two connections, then CloseFd of the listener ends it (its last completion
// ECANCELED), closes it with no error, and releases the socket: a new connection is refused.
func TestRegisteredFileAcceptMultishotThenCloseFd(t *testing.T) {
	ln, sa := testutil.Listener(t)
	l := newLoop(t, "uring")
	register(t, l, ln)
	var acc, cls recorder
	must(t)(l.AcceptMultishot(ln, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, acc.cb, 0))
	untilWaited(t, l)
	testutil.Dial(t, sa)
	testutil.Dial(t, sa)
	until(t, l, func() bool { return acc.n() >= 2 })
	for _, c := range acc.got {
		if c.Err != nil || !c.More {
			t.Fatalf("accept: N %d err %v More %v; want a connection, More set", c.N, c.Err, c.More)
		}
		unix.Close(c.N)
	}
	must(t)(l.CloseFd(ln, cls.cb, 0))
	testutil.HandOver(t, ln)
	until(t, l, func() bool { return cls.n() > 0 && acc.n() >= 3 })
	wantOne(t, &cls, 0)
	if c := acc.last(t); c.More || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("the accept's last completion: N %d err %v More %v; want ECANCELED", c.N, c.Err, c.More)
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Own(t, s)
	if err := unix.Connect(s, sa); !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("connect after CloseFd of the registered listener: %v, want ECONNREFUSED (the listener released)", err)
	}
}

// TestRegisteredFileLoopCloseWithManyInFlightLeaksNothing: 64 registered sockets, each with a
// Recv and a large Send in flight (some linked to deadlines), half of them with a CloseFd
// waiting for those: Loop.Close closes the latter, and after a close(2) of the others every
// peer reads EOF at once; no fd and no goroutine is left.
func TestRegisteredFileLoopCloseWithManyInFlightLeaksNothing(t *testing.T) {
	requireRegisteredFiles(t) // before fds0: it makes and closes a loop of its own
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fds0 := len(testutil.OpenFds(t))
	const n = 64
	type pair struct{ a, b int }
	ps := make([]pair, n)
	for i := range ps {
		a, b := testutil.Socketpair(t)
		ps[i] = pair{a, b}
		if err := unix.SetsockoptInt(a, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
			t.Fatal(err)
		}
	}
	l := newLoop(t, "uring")
	big := make([]byte, 256<<10)
	nop := func(*ringev.Completion) {}
	for i, p := range ps {
		register(t, l, p.a)
		h := must(t)(l.Recv(p.a, make([]byte, 16), 0, nop, 0))
		if i%3 == 0 {
			if err := h.SetTimeout(time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		must(t)(l.Send(p.a, big, 0, nop, 0))
	}
	untilWaited(t, l)
	for i, p := range ps {
		if i%2 == 0 {
			must(t)(l.CloseFd(p.a, nop, 0))
			testutil.HandOver(t, p.a)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if i%2 == 0 {
			if !testutil.IsClosed(p.a) {
				t.Errorf("fd %d: Loop.Close left open the fd a CloseFd was closing", p.a)
			}
		} else if err := testutil.Close(t, p.a); err != nil {
			t.Errorf("close(%d): %v", p.a, err)
		}
	}
	for i, p := range ps {
		testutil.ExpectEOF(t, p.b, 0, "peer "+strconv.Itoa(i)+" after Loop.Close")
		testutil.Close(t, p.b)
	}
	runtime.GC()
	if got := len(testutil.OpenFds(t)); got != fds0 {
		t.Fatalf("%d fds open after the test, %d before", got, fds0)
	}
}
