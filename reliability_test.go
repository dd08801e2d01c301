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
