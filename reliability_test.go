//go:build linux

package ringev_test

// Reliability (issue 11): the shapes of public bug reports against event loops, each a whole
// class. A dup'd fd closed with close(2) behind the loop (items 1), a raw close while the poll
// backend sleeps in ppoll (2), io_uring_enter denied while io_uring_setup works (4), handlers
// that re-queue themselves starving the fds (6), half-close and the flags a handler sees (6b).

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestAutoFallsBackWhenIoUringEnterDenied (issue 11 item 4): io_uring_setup works but
// io_uring_enter fails with EPERM (a seccomp filter that denies it alone, installed by a child
// process: the test re-executes its own binary). "auto" must not accept a backend whose first
// wait would fail: it chooses epoll, and BackendReason names io_uring_enter; WithBackend("uring")
// and ("uring-poll") fail in New with an error that names io_uring_enter and wraps EPERM.
func TestAutoFallsBackWhenIoUringEnterDenied(t *testing.T) {
	if deniedChildIfAsked() {
		return
	}
	if l, err := ringev.New(ringev.WithBackend("uring")); err != nil {
		t.Skipf("the uring backend does not work here even without the filter: %v", err)
	} else {
		l.Close()
	}
	res := runDenied(t, "TestAutoFallsBackWhenIoUringEnterDenied", unix.SYS_IO_URING_ENTER, unix.EPERM)
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

// requeuer is a handler kind that re-queues itself from its own run: a zero-delay timer, an
// immediate, a posted function.
type requeuer struct {
	name  string
	start func(l *ringev.Loop, ran *int)
}

var requeuers = []requeuer{
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
	eachMode(t, ringev.Backends(), allModes, func(t *testing.T, b string, m mode) {
		for _, q := range requeuers {
			t.Run(q.name, func(t *testing.T) {
				r, w := ownedPipe(t)
				l := newLoop(t, b, m.opts()...)
				fdRuns, otherRuns := 0, 0
				addFd(t, l, r.fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) { fdRuns++ }) // never drained
				testutil.Write(t, w.fd, []byte{'x'})
				q.start(l, &otherRuns)
				gap, maxGap, firstFd := 0, 0, -1
				for i := 0; i < onces; i++ {
					before := fdRuns
					testutil.Once(t, l, deadline)
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
	})
}
