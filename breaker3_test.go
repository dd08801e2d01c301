package ringev_test

// Breaker tests for registered files (Loop.RegisterFile, UnregisterFile: the ring's
// registered-file table, IOSQE_FIXED_FILE, slot number = fd number), beyond regfile_test.go:
// the loop's own closes of a registered fd, Loop.Close, number reuse, registration changes from
// callbacks and handlers and between a request and its deadline, and random operations.

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestRegisteredFdAutoClosedByItsFdEventIsReleased: an fd event with auto-close on a
// registered socket closes it (FdEvent.Close): the loop closes the number itself, so it must
// empty the slot too, else the table keeps the file and the peer never reads EOF.
func TestRegisteredFdAutoClosedByItsFdEventIsReleased(t *testing.T) {
	requireRegisteredFiles(t)
	a, peer := ownedSocketpair(t)
	l := newLoop(t, "uring")
	if err := l.RegisterFile(a.fd); err != nil {
		t.Fatal(err)
	}
	ev := addFd(t, l, a.fd, ringev.Read, never(t, "idle socket"))
	ev.SetAutoClose(true)
	a.HandOver()
	settle(t, l, 10*time.Millisecond, 3)
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, peer.fd, releaseWithin, "auto-close of a registered fd by FdEvent.Close")
}

// TestRegisteredFdAutoClosedThenNumberReusedReachesTheNewFile: after an fd event's auto-close
// of a registered fd, a new socket that takes the number gets the requests made on it (not the
// old socket the table would still hold).
func TestRegisteredFdAutoClosedThenNumberReusedReachesTheNewFile(t *testing.T) {
	requireRegisteredFiles(t)
	a, oldPeer := ownedSocketpair(t)
	l := newLoop(t, "uring")
	if err := l.RegisterFile(a.fd); err != nil {
		t.Fatal(err)
	}
	var first recorder
	must(t)(l.Send(a.fd, []byte("old"), 0, first.cb, 0)) // the loop knows the number
	until(t, l, func() bool { return first.n() > 0 })
	testutil.Drain(t, oldPeer.fd)
	ev := addFd(t, l, a.fd, ringev.Read, never(t, "idle socket"))
	ev.SetAutoClose(true)
	num := a.fd
	a.HandOver()
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	n, newPeer := ownedSocketpair(t)
	if n.fd != num {
		n = renumber(t, n, num)
	}
	var snd recorder
	must(t)(l.Send(num, []byte("new"), 0, snd.cb, 0))
	until(t, l, func() bool { return snd.n() > 0 })
	wantOne(t, &snd, 3)
	buf := make([]byte, 16)
	if k, err := unix.Read(newPeer.fd, buf); err != nil || string(buf[:k]) != "new" {
		t.Fatalf("the new socket's peer read %q (err %v), want \"new\": the Send went to the old socket", buf[:max(k, 0)], err)
	}
}

// TestRegisteredFdWithCloseFdPendingAtLoopCloseIsReleasedAtOnce: Loop.Close while a CloseFd of
// a registered fd waits for its Recv closes the fd, and the peer reads EOF as soon as Close
// returns (as for an fd not registered: TestBreakerLoopCloseFinishesPendingCloseFd).
func TestRegisteredFdWithCloseFdPendingAtLoopCloseIsReleasedAtOnce(t *testing.T) {
	requireRegisteredFiles(t)
	a, peer := ownedSocketpair(t)
	l := newLoop(t, "uring")
	if err := l.RegisterFile(a.fd); err != nil {
		t.Fatal(err)
	}
	must(t)(l.Recv(a.fd, make([]byte, 16), 0, func(*ringev.Completion) {}, 0))
	onceWithin(t, l, time.Millisecond)
	must(t)(l.CloseFd(a.fd, func(*ringev.Completion) {}, 0))
	a.HandOver()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !isClosed(a.fd) {
		t.Fatal("Loop.Close left open the fd that CloseFd was closing")
	}
	expectEOF(t, peer.fd, 0, "Loop.Close with a CloseFd of a registered fd pending")
}

// TestRegisteredFdClosedAfterLoopCloseIsReleasedAtOnce: Loop.Close lets go of the
// registered-file table: a close(2) of a registered fd after it releases the file at once (the
// peer reads EOF), as for an fd never registered.
func TestRegisteredFdClosedAfterLoopCloseIsReleasedAtOnce(t *testing.T) {
	requireRegisteredFiles(t)
	a, peer := ownedSocketpair(t)
	l := newLoop(t, "uring")
	if err := l.RegisterFile(a.fd); err != nil {
		t.Fatal(err)
	}
	must(t)(l.Recv(a.fd, make([]byte, 16), 0, func(*ringev.Completion) {}, 0))
	onceWithin(t, l, time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, peer.fd, 0, "close(2) of a registered fd after Loop.Close")
}

// TestRegisteredFdAutoClosedByLoopCloseIsReleasedAtOnce: Loop.Close closes a registered fd whose
// fd event has auto-close; the peer reads EOF as soon as Close returns.
func TestRegisteredFdAutoClosedByLoopCloseIsReleasedAtOnce(t *testing.T) {
	requireRegisteredFiles(t)
	a, peer := ownedSocketpair(t)
	l := newLoop(t, "uring")
	if err := l.RegisterFile(a.fd); err != nil {
		t.Fatal(err)
	}
	ev := addFd(t, l, a.fd, ringev.Read, never(t, "idle socket"))
	ev.SetAutoClose(true)
	a.HandOver()
	settle(t, l, 10*time.Millisecond, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, peer.fd, 0, "Loop.Close auto-closing a registered fd")
}
