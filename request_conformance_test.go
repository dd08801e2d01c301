//go:build linux

package ringev_test

// The behaviour suite of requests, run on every backend and with registered files.

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// requestCases is the request behaviour suite, run against every backend by
// TestRequestConformance: uring with SQEs on its ring, the others with the emulation.
var requestCases = []struct {
	name string
	fn   func(t *testing.T, backend string)
}{
	{"ReadCompletesWithTheBytes", testReqRead},
	{"WriteCompletesWithTheCount", testReqWrite},
	{"ReadAndWriteAtAnOffset", testReqFileOffset},
	{"RecvAndSend", testReqRecvSend},
	{"SendLargerThanTheSocketBufferIsFinished", testReqLargeSend},
	{"AcceptOneShot", testReqAccept},
	{"AcceptMultishotOneCompletionPerConnection", testReqAcceptMultishot},
	{"ConnectCompletes", testReqConnect},
	{"FsyncCompletes", testReqFsync},
	{"CancelGivesECANCELED", testReqCancel},
	{"CancelAgainstCompletionRunsOneCallback", testReqCancelRace},
	{"StaleHandleCancelDoesNothing", testReqStaleHandle},
	{"DeadlineGivesETIME", testReqDeadline},
	{"DeadlineAfterSubmissionGivesETIME", testReqDeadlineLate},
	{"CloseFdCancelsRecvAndAcceptAndPeerSeesEOF", testReqCloseFd},
	{"ReusedFdNumberGetsNoOldCompletion", testReqFdReuse},
	{"RecvMultishotIntoBufferGroup", testReqRecvMultishot},
	{"RecvMultishotENOBUFSLosesNothingAndRearms", testReqENOBUFS},
	{"RecvMultishotStopsAfterCloseFd", testReqMultishotCloseFd},
	{"BufferKeptAliveThroughGC", testReqBufferGC},
	{"BadInputIsRefused", testReqBadInput},
	{"CompletionsRunAfterPostedImmediateAndTimer", testReqDispatchOrder},
	{"CompletionsAndFdHandlersTakeTurns", testReqTakeTurnsWithFdEvents},
	{"FloodStarvesNeitherFdEventsNorTimersNorOtherSockets", testReqFlood},
	{"MultishotRecvIsBoundedPerTurn", testReqMultishotBound},
	{"MultishotRecvKeepsTheStreamInOrder", testReqMultishotOrder},
	{"UnopenedLargeFdIsRefusedWithEBADF", testReqLargeFd},
	{"BufferGroupCloseCancelsItsRecvMultishot", testReqGroupCloseCancels},
	{"RunReturnsAfterTheLastCompletion", testReqRunReturns},
	{"PlainCloseAfterTheLastCompletionIsFine", testReqPlainCloseAfter},
	{"SendErrorAfterAPartCountsThePart", testReqSendErrorCount},
	{"ConnectRefusedGivesECONNREFUSED", testReqConnectRefused},
	{"MultishotDeadlineEndsItWithETIME", testReqMultishotDeadline},
	{"CloseFdCancelsAPendingSendWithItsCount", testReqCloseFdSend},
	{"SendToAHalfClosedPeerWaitsAsleep", testReqSendHalfClosedPeer},
}

// TestRequestConformance runs the request suite on every backend. A backend that New cannot
// create here (io_uring switched off or missing) is skipped, naming New's error.
func TestRequestConformance(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		newLoop(t, backend).Close() // skips the backend here if New cannot create it
		for _, c := range requestCases {
			t.Run(c.name, func(t *testing.T) { c.fn(t, backend) })
		}
	})
}

func testReqRead(t *testing.T, backend string) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	var rec recorder
	buf := make([]byte, 64)
	h, err := l.Read(r, buf, -1, rec.cb, 7)
	must(t)(h, err)
	testutil.Write(t, w, []byte("hello"))
	until(t, l, func() bool { return rec.n() > 0 })
	c := wantOne(t, &rec, 5)
	if string(rec.bufs[0]) != "hello" || c.Token != 7 || c.Op != ringev.OpRead || c.Fd != r || c.More {
		t.Fatalf("completion %+v, buf %q", c, rec.bufs[0])
	}
	if h.Pending() {
		t.Fatal("handle still pending after its last completion")
	}
}

func testReqWrite(t *testing.T, backend string) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	var rec recorder
	must(t)(l.Write(w, []byte("abc"), -1, rec.cb, 0))
	until(t, l, func() bool { return rec.n() > 0 })
	wantOne(t, &rec, 3)
	var got [8]byte
	n, _ := unix.Read(r, got[:])
	if string(got[:n]) != "abc" {
		t.Fatalf("pipe holds %q", got[:n])
	}
}

func testReqFileOffset(t *testing.T, backend string) {
	f := testutil.TempFile(t)
	fd := int(f.Fd())
	l := newLoop(t, backend)
	var wr, rd recorder
	must(t)(l.Write(fd, []byte("0123456789"), 0, wr.cb, 0))
	until(t, l, func() bool { return wr.n() > 0 })
	wantOne(t, &wr, 10)
	buf := make([]byte, 4)
	must(t)(l.Read(fd, buf, 3, rd.cb, 0))
	until(t, l, func() bool { return rd.n() > 0 })
	wantOne(t, &rd, 4)
	if string(rd.bufs[0]) != "3456" {
		t.Fatalf("read at 3: %q", rd.bufs[0])
	}
}

func testReqRecvSend(t *testing.T, backend string) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend)
	var rcv, snd recorder
	buf := make([]byte, 16)
	must(t)(l.Recv(a, buf, 0, rcv.cb, 1))
	must(t)(l.Send(b, []byte("ping"), 0, snd.cb, 2))
	until(t, l, func() bool { return rcv.n() > 0 && snd.n() > 0 })
	wantOne(t, &snd, 4)
	wantOne(t, &rcv, 4)
	if string(rcv.bufs[0]) != "ping" {
		t.Fatalf("received %q", rcv.bufs[0])
	}
}

func testReqLargeSend(t *testing.T, backend string) {
	a, b := testutil.Socketpair(t)
	if err := unix.SetsockoptInt(a, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, backend)
	big := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB, far above the socket buffer
	var snd, rcv recorder
	must(t)(l.Send(a, big, 0, snd.cb, 0))
	// The reader is a request too: each completion makes the next.
	got := make([]byte, 0, len(big))
	buf := make([]byte, 64<<10)
	var onRecv ringev.Callback
	onRecv = func(c *ringev.Completion) {
		if c.Err != nil || c.N == 0 {
			rcv.cb(c)
			return
		}
		got = append(got, c.Buf...)
		if len(got) < len(big) {
			if _, err := l.Recv(b, buf, 0, onRecv, 0); err != nil {
				t.Error(err)
			}
		}
	}
	must(t)(l.Recv(b, buf, 0, onRecv, 0))
	until(t, l, func() bool { return snd.n() > 0 && len(got) == len(big) || rcv.n() > 0 })
	if rcv.n() > 0 {
		t.Fatalf("recv ended early: %+v", rcv.got)
	}
	wantOne(t, &snd, len(big))
	if !bytes.Equal(got, big) {
		t.Fatal("received bytes differ from those sent")
	}
}

func closeAccepted(t *testing.T, r *recorder) {
	t.Cleanup(func() {
		for _, c := range r.got {
			if c.Err == nil && c.N > 0 && (c.Op == ringev.OpAccept || c.Op == ringev.OpAcceptMultishot) {
				unix.Close(c.N)
			}
		}
	})
}

func testReqAccept(t *testing.T, backend string) {
	lfd, sa := testutil.Listener(t)
	l := newLoop(t, backend)
	var rec recorder
	closeAccepted(t, &rec)
	must(t)(l.Accept(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, rec.cb, 0))
	testutil.Dial(t, sa)
	until(t, l, func() bool { return rec.n() > 0 })
	c := rec.last(t)
	if c.Err != nil || c.N <= 0 || c.More {
		t.Fatalf("accept: %+v", c)
	}
}

func testReqAcceptMultishot(t *testing.T, backend string) {
	lfd, sa := testutil.Listener(t)
	l := newLoop(t, backend)
	var rec recorder
	closeAccepted(t, &rec)
	h, err := l.AcceptMultishot(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, rec.cb, 0)
	must(t)(h, err)
	for i := 0; i < 3; i++ {
		testutil.Dial(t, sa)
	}
	until(t, l, func() bool { return rec.n() >= 3 })
	for _, c := range rec.got {
		if c.Err != nil || c.N <= 0 || !c.More {
			t.Fatalf("accept completion %+v", c)
		}
	}
	if err := h.Cancel(); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return !rec.last(t).More })
	if c := rec.last(t); !errors.Is(c.Err, unix.ECANCELED) || rec.n() != 4 {
		t.Fatalf("after Cancel: %d completions, last %+v", rec.n(), c)
	}
}

func testReqConnect(t *testing.T, backend string) {
	lfd, sa := testutil.Listener(t)
	fd := testutil.TCPSocket(t)
	l := newLoop(t, backend)
	var rec recorder
	must(t)(l.Connect(fd, sa, rec.cb, 0))
	until(t, l, func() bool { return rec.n() > 0 })
	wantOne(t, &rec, 0)
	nfd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatalf("the listener has no connection: %v", err)
	}
	unix.Close(nfd)
}

func testReqFsync(t *testing.T, backend string) {
	f := testutil.TempFile(t)
	f.WriteString("x")
	l := newLoop(t, backend)
	var rec recorder
	must(t)(l.Fsync(int(f.Fd()), false, rec.cb, 0))
	until(t, l, func() bool { return rec.n() > 0 })
	wantOne(t, &rec, 0)
}

func testReqCancel(t *testing.T, backend string) {
	a, _ := testutil.Socketpair(t)
	l := newLoop(t, backend)
	var rec recorder
	h, err := l.Recv(a, make([]byte, 8), 0, rec.cb, 0)
	must(t)(h, err)
	// Let it reach the kernel (or the emulation's wait) first.
	untilWaited(t, l)
	if err := h.Cancel(); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
		t.Fatalf("%d completions, last %+v", rec.n(), c)
	}
}

func testReqCancelRace(t *testing.T, backend string) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend)
	for i := 0; i < 50; i++ {
		var rec recorder
		h, err := l.Recv(a, make([]byte, 8), 0, rec.cb, 0)
		must(t)(h, err)
		if i%2 == 0 {
			testutil.Write(t, b, []byte("x"))
		}
		if i%3 == 0 {
			untilWaited(t, l)
		}
		h.Cancel()
		until(t, l, func() bool { return rec.n() > 0 })
		// A few more turns: no second callback may come.
		runTimer(t, l, time.Millisecond, 0)
		if rec.n() != 1 {
			t.Fatalf("round %d: %d callbacks", i, rec.n())
		}
		if c := rec.got[0]; !(c.Err == nil && c.N == 1 || errors.Is(c.Err, unix.ECANCELED)) {
			t.Fatalf("round %d: %+v", i, c)
		}
		testutil.Drain(t, a)
	}
}

func testReqStaleHandle(t *testing.T, backend string) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	var first, second recorder
	h1, err := l.Read(r, make([]byte, 8), -1, first.cb, 0)
	must(t)(h1, err)
	testutil.Write(t, w, []byte("1"))
	until(t, l, func() bool { return first.n() > 0 })
	// The record is recycled for the next request: the old handle must not reach it.
	h2, err := l.Read(r, make([]byte, 8), -1, second.cb, 0)
	must(t)(h2, err)
	if err := h1.Cancel(); err != nil {
		t.Fatal(err)
	}
	testutil.Write(t, w, []byte("2"))
	until(t, l, func() bool { return second.n() > 0 })
	wantOne(t, &second, 1)
	if first.n() != 1 {
		t.Fatalf("first request: %d callbacks", first.n())
	}
}

func testReqDeadline(t *testing.T, backend string) {
	a, _ := testutil.Socketpair(t)
	l := newLoop(t, backend)
	var rec recorder
	h, err := l.Recv(a, make([]byte, 8), 0, rec.cb, 0)
	must(t)(h, err)
	if err := h.SetTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("%d completions, last %+v", rec.n(), c)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatalf("ETIME after %v, before the 20 ms deadline", time.Since(start))
	}
}

func testReqDeadlineLate(t *testing.T, backend string) {
	a, _ := testutil.Socketpair(t)
	l := newLoop(t, backend)
	var rec recorder
	h, err := l.Recv(a, make([]byte, 8), 0, rec.cb, 0)
	must(t)(h, err)
	untilWaited(t, l) // the recv is in the kernel now
	if err := h.SetTimeout(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("%d completions, last %+v", rec.n(), c)
	}
}

func testReqCloseFd(t *testing.T, backend string) {
	lfd, _ := testutil.Listener(t)
	conn, b := testutil.Socketpair(t) // conn is handed to the loop's CloseFd; b is the peer
	ldup, err := unix.Dup(lfd)
	if err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, backend)
	var rcv, acc, cls recorder
	must(t)(l.Recv(conn, make([]byte, 8), 0, rcv.cb, 0))
	must(t)(l.Accept(ldup, 0, acc.cb, 0))
	untilWaited(t, l) // both are in the kernel now
	must(t)(l.CloseFd(conn, cls.cb, 0))
	testutil.HandOver(t, conn)
	must(t)(l.CloseFd(ldup, cls.cb, 0))
	until(t, l, func() bool { return cls.n() == 2 })
	testutil.ExpectEOF(t, b, testutil.ReleaseWithin, "CloseFd of the recv's socket")
	for _, r := range []*recorder{&rcv, &acc} {
		if c := r.last(t); r.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) {
			t.Fatalf("%d completions, last %+v", r.n(), c)
		}
	}
	for _, c := range cls.got {
		if c.Err != nil || c.Op != ringev.OpClose {
			t.Fatalf("close: %+v", c)
		}
	}
	if !testutil.IsClosed(conn) {
		t.Fatalf("fd %d still open after CloseFd", conn)
	}
}

func testReqFdReuse(t *testing.T, backend string) {
	a, _ := testutil.Socketpair(t)
	old, err := unix.Dup(a)
	if err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, backend)
	var oldRec, newRec, cls recorder
	must(t)(l.Recv(old, make([]byte, 8), 0, oldRec.cb, 1))
	untilWaited(t, l)
	must(t)(l.CloseFd(old, cls.cb, 0))
	until(t, l, func() bool { return cls.n() > 0 })
	// A new socketpair takes the freed number.
	c, d, _ := testutil.SocketpairAt(t, old)
	must(t)(l.Recv(c, make([]byte, 8), 0, newRec.cb, 2))
	testutil.Write(t, d, []byte("new"))
	until(t, l, func() bool { return newRec.n() > 0 && oldRec.n() > 0 })
	wantOne(t, &newRec, 3)
	if oldRec.n() != 1 || !errors.Is(oldRec.got[0].Err, unix.ECANCELED) {
		t.Fatalf("old request: %+v", oldRec.got)
	}
}

func testReqRecvMultishot(t *testing.T, backend string) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend)
	g, err := l.NewBufferGroup(8, 64)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	h, err := l.RecvMultishot(a, g, 0, rec.cb, 0)
	must(t)(h, err)
	var want []byte
	for i := 0; i < 5; i++ {
		msg := []byte{byte('a' + i), byte('a' + i)}
		want = append(want, msg...)
		testutil.Write(t, b, msg)
		n := rec.n()
		until(t, l, func() bool { return rec.n() > n })
	}
	var got []byte
	for i, c := range rec.got {
		if c.Err != nil || !c.More || c.N == 0 {
			t.Fatalf("completion %d: %+v", i, c)
		}
		got = append(got, rec.bufs[i]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("received %q, want %q", got, want)
	}
	unix.Shutdown(b, unix.SHUT_WR)
	until(t, l, func() bool { return !rec.last(t).More })
	if c := rec.last(t); c.Err != nil || c.N != 0 {
		t.Fatalf("last completion %+v, want EOF", c)
	}
}

func testReqENOBUFS(t *testing.T, backend string) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend)
	g, err := l.NewBufferGroup(2, 16)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var held []int
	enobufs := 0
	cb := func(c *ringev.Completion) {
		switch {
		case errors.Is(c.Err, unix.ENOBUFS):
			if !c.More {
				t.Errorf("ENOBUFS without More: %+v", c)
			}
			enobufs++
		case c.Err != nil:
			t.Errorf("completion %+v", c)
		default:
			got = append(got, c.Buf...)
			held = append(held, c.BufferID()) // kept: the group runs dry
		}
	}
	must(t)(l.RecvMultishot(a, g, 0, cb, 0))
	want := bytes.Repeat([]byte("0123456789"), 10) // 100 bytes: more than 2 buffers of 16
	testutil.Write(t, b, want)
	until(t, l, func() bool { return enobufs > 0 })
	if len(got) != 32 {
		t.Fatalf("before ENOBUFS: %d bytes, want 32 (two buffers)", len(got))
	}
	for len(got) < len(want) {
		for _, id := range held {
			g.Release(id)
		}
		held = held[:0]
		n := len(got)
		until(t, l, func() bool { return len(got) > n })
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("received %q, want %q", got, want)
	}
}

func testReqMultishotCloseFd(t *testing.T, backend string) {
	a, b := testutil.Socketpair(t)
	conn, err := unix.Dup(a)
	if err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, backend)
	g, err := l.NewBufferGroup(4, 64)
	if err != nil {
		t.Fatal(err)
	}
	var rec, cls recorder
	must(t)(l.RecvMultishot(conn, g, 0, rec.cb, 0))
	testutil.Write(t, b, []byte("x"))
	until(t, l, func() bool { return rec.n() > 0 })
	must(t)(l.CloseFd(conn, cls.cb, 0))
	until(t, l, func() bool { return cls.n() > 0 && !rec.last(t).More })
	n := rec.n()
	testutil.Write(t, b, []byte("y")) // to a, which shares the file: the closed request must not see it
	runTimer(t, l, 20*time.Millisecond, 0)
	if rec.n() != n || !errors.Is(rec.last(t).Err, unix.ECANCELED) {
		t.Fatalf("after CloseFd: %d completions (had %d), last %+v", rec.n(), n, rec.last(t))
	}
}

func testReqBufferGC(t *testing.T, backend string) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	var got []byte
	var at uintptr // where the completion's bytes are (an address, not a reference)
	intact := false
	cb := func(c *ringev.Completion) {
		got, at = append([]byte(nil), c.Buf...), uintptr(unsafe.Pointer(unsafe.SliceData(c.Buf)))
		rest := c.Buf[len(c.Buf):cap(c.Buf)]
		intact = len(rest) > 0 && bytes.Count(rest, []byte{0xee}) == len(rest)
	}
	var addr uintptr
	func() {
		buf := make([]byte, 4096)
		for i := range buf {
			buf[i] = 0xee
		}
		addr = uintptr(unsafe.Pointer(&buf[0]))
		must(t)(l.Read(r, buf, -1, cb, 0))
	}() // no reference to buf is left but the loop's
	untilWaited(t, l)
	for i := 0; i < 5; i++ {
		junk := make([][]byte, 256) // churn, so that freed memory would be reused
		for j := range junk {
			junk[j] = make([]byte, 4096)
		}
		runtime.GC()
	}
	testutil.Write(t, w, []byte("landed"))
	until(t, l, func() bool { return got != nil })
	if string(got) != "landed" || at != addr || !intact {
		t.Fatalf("read %q at %#x (the buffer was at %#x), rest of the buffer intact: %v", got, at, addr, intact)
	}
}

func testReqBadInput(t *testing.T, backend string) {
	a, _ := testutil.Socketpair(t)
	l := newLoop(t, backend)
	cb := func(*ringev.Completion) {}
	buf := make([]byte, 8)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"nil callback", second(l.Recv(a, buf, 0, nil, 0)), ringev.ErrNilCallback},
		{"negative fd", second(l.Recv(-1, buf, 0, cb, 0)), unix.EBADF},
		{"empty buffer read", second(l.Read(a, nil, -1, cb, 0)), ringev.ErrEmptyBuffer},
		{"empty buffer send", second(l.Send(a, []byte{}, 0, cb, 0)), ringev.ErrEmptyBuffer},
		{"nil buffer group", second(l.RecvMultishot(a, nil, 0, cb, 0)), unix.EINVAL},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	done := make(chan error)
	go func() { _, err := l.Recv(a, buf, 0, cb, 0); done <- err }()
	if err := <-done; !errors.Is(err, ringev.ErrNotOwner) {
		t.Errorf("from another goroutine: %v, want ErrNotOwner", err)
	}
	// Nothing was submitted: the loop has nothing to wait for.
	if err := onceErr(t, l); !errors.Is(err, ringev.ErrNothingToDo) {
		t.Errorf("Once after refused requests: %v, want ErrNothingToDo", err)
	}
	l2 := newLoop(t, backend)
	if err := l2.Close(); err != nil {
		t.Fatalf("Loop.Close: %v", err)
	}
	if _, err := l2.Recv(a, buf, 0, cb, 0); !errors.Is(err, ringev.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

func second(_ ringev.Request, err error) error { return err }

func testReqDispatchOrder(t *testing.T, backend string) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	var order []string
	testutil.Write(t, w, []byte("x"))
	must(t)(l.Read(r, make([]byte, 8), -1, func(*ringev.Completion) { order = append(order, "completion") }, 0))
	must(t)(l.Write(w, []byte("y"), -1, func(*ringev.Completion) { order = append(order, "completion") }, 0))
	l.Post(func() { order = append(order, "posted") })
	l.AddImmediate(func() { order = append(order, "immediate") })
	l.AddTimer(0, func(*ringev.Timer) { order = append(order, "timer") })
	until(t, l, func() bool { return len(order) == 5 })
	want := []string{"posted", "immediate", "timer", "completion", "completion"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
}

func testReqTakeTurnsWithFdEvents(t *testing.T, backend string) {
	// Two fd events stay ready; 40 writes complete. Between two completion batches an fd
	// handler runs, and no batch holds more than 32.
	_, w := testutil.Pipe(t)
	r2, w2 := testutil.Pipe(t)
	testutil.Write(t, w2, []byte("ready"))
	l := newLoop(t, backend)
	var order []byte
	addFd(t, l, r2, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { order = append(order, 'F') })
	cb := func(*ringev.Completion) { order = append(order, 'c') }
	for i := 0; i < 40; i++ {
		must(t)(l.Write(w, []byte("y"), -1, cb, 0))
	}
	until(t, l, func() bool { return bytes.Count(order, []byte("c")) == 40 })
	run := 0
	for i, x := range order {
		if x == 'F' {
			run = 0
			continue
		}
		if run++; run > 32 {
			t.Fatalf("more than 32 completions in a row: %s (at %d)", order, i)
		}
	}
	if bytes.Count(order, []byte("F")) < 1 {
		t.Fatalf("no fd handler ran among the completions: %s", order)
	}
}

func testReqFlood(t *testing.T, backend string) {
	// Socket a floods: its recv completes every turn. Socket c gets one message; a pipe fd
	// event and a timer wait too. All must run while the flood goes on.
	a, b := testutil.Socketpair(t)
	c, d := testutil.Socketpair(t)
	pr, pw := testutil.Pipe(t)
	l := newLoop(t, backend)
	g, err := l.NewBufferGroup(64, 64)
	if err != nil {
		t.Fatal(err)
	}
	flood := 0
	junk := bytes.Repeat([]byte("z"), 60)
	var onFlood ringev.Callback = func(cp *ringev.Completion) {
		flood++
		cp.ReleaseBuffer()
		if cp.Err == nil && cp.More {
			unix.Write(b, junk) // keep it coming
		}
	}
	must(t)(l.RecvMultishot(a, g, 0, onFlood, 0))
	buf := make([]byte, 64)
	var onOne recorder
	must(t)(l.Recv(c, buf, 0, onOne.cb, 0))
	fdRan, timerRan := false, false
	addFd(t, l, pr, ringev.Read, func(ev *ringev.FdEvent, _ ringev.Flags) { fdRan = true; ev.SetFlags(0) })
	l.AddTimer(2*time.Millisecond, func(*ringev.Timer) { timerRan = true })
	for i := 0; i < 8; i++ {
		unix.Write(b, junk)
	}
	testutil.Write(t, d, []byte("one"))
	testutil.Write(t, pw, []byte("p"))
	until(t, l, func() bool { return fdRan && timerRan && onOne.n() > 0 })
	if flood == 0 {
		t.Fatal("the flood never ran")
	}
	wantOne(t, &onOne, 3)
}

func testReqRunReturns(t *testing.T, backend string) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, backend)
	var rec recorder
	must(t)(l.Read(r, make([]byte, 8), -1, rec.cb, 0))
	testutil.Write(t, w, []byte("x"))
	if err := run(t, l, deadline); err != nil {
		t.Fatal(err)
	}
	wantOne(t, &rec, 1)
}

func testReqMultishotBound(t *testing.T, backend string) {
	// Socket a holds 25 buffers' worth of data (25 completions of a multishot recv into
	// 4-byte buffers); socket c gets one message. c's completion must not wait behind more
	// than 8 of a's (liburing #1043: a fourth client got nothing).
	a, b := testutil.Socketpair(t)
	c, d := testutil.Socketpair(t)
	l := newLoop(t, backend)
	g, err := l.NewBufferGroup(64, 4)
	if err != nil {
		t.Fatal(err)
	}
	var order []byte
	floodCb := func(x *ringev.Completion) {
		x.ReleaseBuffer()
		if x.Err == nil && x.N > 0 {
			order = append(order, 'a')
		}
	}
	var one recorder
	oneCb := func(x *ringev.Completion) { order = append(order, 'c'); one.cb(x) }
	must(t)(l.RecvMultishot(a, g, 0, floodCb, 0))
	must(t)(l.Recv(c, make([]byte, 8), 0, oneCb, 0))
	untilWaited(t, l) // both wait in the kernel (or for readiness)
	testutil.Write(t, b, bytes.Repeat([]byte("0123"), 25))
	testutil.Write(t, d, []byte("hi"))
	until(t, l, func() bool { return one.n() > 0 })
	if i := bytes.IndexByte(order, 'c'); i > 8 {
		t.Fatalf("the other socket's completion ran after %d of the flooding socket's: %s", i, order)
	}
}

func testReqMultishotOrder(t *testing.T, backend string) {
	// More completions of one multishot recv than one batch runs (32), and more than one
	// request may run per turn (8), are queued at once: the callback must still get the
	// stream's bytes in the order they were sent.
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend)
	g, err := l.NewBufferGroup(256, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	cb := func(x *ringev.Completion) {
		if x.Err == nil {
			got = append(got, x.Buf...)
		}
		x.ReleaseBuffer()
	}
	must(t)(l.RecvMultishot(a, g, 0, cb, 0))
	untilWaited(t, l) // the recv waits in the kernel (or for readiness)
	want := make([]byte, 0, 800)
	for i := 0; len(want) < cap(want); i++ {
		want = fmt.Appendf(want, "%04d", i)
	}
	testutil.Write(t, b, want)
	until(t, l, func() bool { return len(got) >= len(want) })
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("the stream arrived out of order from byte %d: got %q..., want %q...", i, got[i:min(i+16, len(got))], want[i:min(i+16, len(want))])
	}
}

func testReqGroupCloseCancels(t *testing.T, backend string) {
	// Closing a group that a RecvMultishot still uses cancels the recv, alike on every
	// backend: no data completion after Close (the emulation went on receiving into the
	// closed group's buffers), and one last completion, ECANCELED (uring ended with ENOBUFS).
	a, b := testutil.Socketpair(t)
	l := newLoop(t, backend)
	g, err := l.NewBufferGroup(8, 16)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	must(t)(l.RecvMultishot(a, g, 0, rec.cb, 0))
	untilWaited(t, l) // the recv waits in the kernel (or for readiness)
	if err := g.Close(); err != nil {
		t.Fatalf("BufferGroup.Close: %v", err)
	}
	testutil.Write(t, b, []byte("after close"))
	until(t, l, func() bool { return rec.n() > 0 && !rec.last(t).More })
	settle(t, l, 20*time.Millisecond, 50)
	if len(rec.got) != 1 || !errors.Is(rec.got[0].Err, unix.ECANCELED) {
		t.Fatalf("completions after the group closed: %+v; want one, ECANCELED", rec.got)
	}
}

func testReqLargeFd(t *testing.T, backend string) {
	// An fd number that names no open file, far beyond any the loop has seen, fails with
	// EBADF at once: the loop's per-fd table must not grow to it (2147483647 entries made
	// the process die of memory).
	l := newLoop(t, backend)
	var rec recorder
	for _, fd := range []int{1<<31 - 1, 1 << 20} {
		_, err := l.Read(fd, make([]byte, 8), -1, rec.cb, 0)
		if !errors.Is(err, unix.EBADF) {
			t.Errorf("Read on unopened fd %d: %v, want an error wrapping EBADF", fd, err)
		}
		_, err = l.CloseFd(fd, rec.cb, 0)
		if !errors.Is(err, unix.EBADF) {
			t.Errorf("CloseFd on unopened fd %d: %v, want an error wrapping EBADF", fd, err)
		}
	}
	if rec.n() != 0 {
		t.Fatalf("%d completions for refused requests", rec.n())
	}
}

func testReqPlainCloseAfter(t *testing.T, backend string) {
	// Once an fd has no request left, the caller may close it with close(2): the loop must
	// not go on watching it (poll would report POLLNVAL).
	a, b := testutil.Socketpair(t)
	conn, err := unix.Dup(a)
	if err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, backend)
	var rec recorder
	must(t)(l.Recv(conn, make([]byte, 8), 0, rec.cb, 0))
	testutil.Write(t, b, []byte("x"))
	until(t, l, func() bool { return rec.n() > 0 })
	wantOne(t, &rec, 1)
	unix.Close(conn)
	for i := 0; i < 3; i++ {
		l.AddTimer(time.Millisecond, func(*ringev.Timer) {})
		if err := onceErr(t, l); err != nil {
			t.Fatalf("Once after a plain close of an fd without requests: %v", err)
		}
	}
}

func testReqSendErrorCount(t *testing.T, backend string) {
	// The peer reads a little and closes: the send ends with an error, and N counts what
	// went before it.
	peer, a := testutil.Socketpair(t) // the test closes peer
	l := newLoop(t, backend)
	big := make([]byte, 8<<20)
	var rec recorder
	must(t)(l.Send(a, big, 0, rec.cb, 0))
	untilWaited(t, l)
	var junk [4096]byte
	unix.Read(peer, junk[:])
	testutil.Close(t, peer)
	until(t, l, func() bool { return rec.n() > 0 })
	c := rec.last(t)
	if !errors.Is(c.Err, unix.EPIPE) && !errors.Is(c.Err, unix.ECONNRESET) {
		t.Fatalf("send to a closed peer: %+v, want EPIPE or ECONNRESET", c)
	}
	if c.N <= 0 || c.N >= len(big) {
		t.Fatalf("N %d: want the part sent before the error (0 < N < %d)", c.N, len(big))
	}
}

func testReqConnectRefused(t *testing.T, backend string) {
	// A port bound but not listened on: connecting is refused.
	tmp, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tmp)
	if err := unix.Bind(tmp, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	bound, err := unix.Getsockname(tmp)
	if err != nil {
		t.Fatal(err)
	}
	sa := bound.(*unix.SockaddrInet4)
	fd := testutil.TCPSocket(t)
	l := newLoop(t, backend)
	var rec recorder
	must(t)(l.Connect(fd, sa, rec.cb, 0))
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.last(t); rec.n() != 1 || !errors.Is(c.Err, unix.ECONNREFUSED) {
		t.Fatalf("%d completions, last %+v", rec.n(), c)
	}
}

func testReqMultishotDeadline(t *testing.T, backend string) {
	lfd, _ := testutil.Listener(t)
	l := newLoop(t, backend)
	var rec recorder
	h := must(t)(l.AcceptMultishot(lfd, 0, rec.cb, 0))
	if err := h.SetTimeout(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return rec.n() > 0 && !rec.last(t).More })
	if c := rec.last(t); !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("last completion %+v, want ETIME", c)
	}
}

func testReqCloseFdSend(t *testing.T, backend string) {
	// A send larger than the socket buffer waits for room; CloseFd cancels it: ECANCELED,
	// N the bytes sent before, and the peer sees them and then EOF.
	conn, peer := testutil.Socketpair(t) // conn is handed to the loop's CloseFd
	l := newLoop(t, backend)
	big := make([]byte, 8<<20)
	var snd, cls recorder
	must(t)(l.Send(conn, big, 0, snd.cb, 0))
	untilWaited(t, l)
	must(t)(l.CloseFd(conn, cls.cb, 0))
	testutil.HandOver(t, conn)
	until(t, l, func() bool { return snd.n() > 0 && cls.n() > 0 })
	c := snd.last(t)
	if snd.n() != 1 || !errors.Is(c.Err, unix.ECANCELED) || c.N <= 0 || c.N >= len(big) {
		t.Fatalf("%d completions, last %+v: want ECANCELED with 0 < N < %d", snd.n(), c, len(big))
	}
	got := 0
	var buf [64 << 10]byte
	for start := time.Now(); time.Since(start) < deadline; {
		n, err := unix.Read(peer, buf[:])
		if err == unix.EAGAIN {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		got += n
	}
	if got != c.N {
		t.Fatalf("the peer read %d bytes before EOF; the completion says %d were sent", got, c.N)
	}
}

// testReqSendHalfClosedPeer: a Send that waits for room on a socket whose peer has shut down its
// writing side lets the loop sleep (the half-close raises POLLRDHUP on every look, which is no
// reason to retry a send), also after a Recv on the same socket had the fd watched for Read and
// Error, and completes once the peer reads. Before the emulation asked for Write and errors
// only, it retried the send (EAGAIN) in every Once.
func testReqSendHalfClosedPeer(t *testing.T, backend string) {
	a, b := testutil.Socketpair(t)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := unix.Write(a, chunk); err != nil {
			break // EAGAIN: b's receive queue and a's send queue are full
		}
	}
	l := newLoop(t, backend)
	var snd, rcv recorder
	must(t)(l.Recv(a, make([]byte, 16), 0, rcv.cb, 1))
	must(t)(l.Send(a, chunk, 0, snd.cb, 2))
	if err := unix.Shutdown(b, unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return rcv.n() > 0 })
	if c := rcv.last(t); c.Err != nil || c.N != 0 {
		t.Fatalf("recv after the peer's half-close: N %d err %v, want end of file", c.N, c.Err)
	}
	settle(t, l, 100*time.Millisecond, 3) // fails if Once keeps running something, or spins
	if snd.n() != 0 {
		t.Fatalf("the send completed though the peer read nothing: %+v", snd.got)
	}
	drainUntil(t, l, b, func() bool { return snd.n() > 0 })
	wantOne(t, &snd, len(chunk))
}

// TestRequestConformanceRegisteredFiles runs the request suite on uring with every request's fd
// in the ring's registered-file table from its first request (as RegisterFile puts it; the
// SQEs carry IOSQE_FIXED_FILE). A kernel without sparse file tables
// (IORING_RSRC_REGISTER_SPARSE, 5.19) skips it.
func TestRequestConformanceRegisteredFiles(t *testing.T) {
	requireRegisteredFiles(t)
	defer ringev.SetRegisterEveryFd(true)()
	for _, c := range requestCases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, uringFixed) })
	}
}
