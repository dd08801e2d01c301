//go:build linux

package ringev_test

// Tests of choosing a backend where io_uring is denied: auto falls back to epoll and says why,
// and an explicit uring backend fails in New naming the call.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// deniedChildEnv carries "NR:ERRNO" to the child: the system call its seccomp filter denies and
// the errno it returns.
const deniedChildEnv = "RINGEV_TEST_DENIED_CHILD"

// runDenied runs test (the calling test's name) again in a child process that denies system call
// nr with errno (deniedChild; the test must open with testutil.ChildDenied), and returns what the child
// reported (testutil.RunDenied): "auto", "auto-reason", "<backend>-err" and "<backend>-wraps"
// for uring and uring-poll, "<backend>" for epoll and poll ("ok" or the error).
func runDenied(t *testing.T, test string, nr uint32, errno syscall.Errno) map[string]string {
	t.Helper()
	return testutil.RunDenied(t, test, deniedChildEnv, nr, errno)
}

// deniedChild is the child's side of runDenied, with the system call denied (errno): it
// creates loops and prints the results.
func deniedChild(errno syscall.Errno) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if l, err := ringev.New(); err != nil {
		fmt.Printf("DENIED auto=error: %v\n", err)
	} else {
		fmt.Printf("DENIED auto=%s\nDENIED auto-reason=%s\n", l.Backend(), l.BackendReason())
		l.Close()
	}
	for _, name := range []string{"uring", "uring-poll"} {
		l, err := ringev.New(ringev.WithBackend(name))
		if err == nil {
			l.Close()
		}
		fmt.Printf("DENIED %s-err=%v\nDENIED %s-wraps=%v\n", name, err, name, errors.Is(err, errno))
	}
	for _, name := range []string{"epoll", "poll"} {
		l, err := ringev.New(ringev.WithBackend(name))
		if err != nil {
			fmt.Printf("DENIED %s=%v\n", name, err)
			continue
		}
		fmt.Printf("DENIED %s=ok\n", name)
		l.Close()
	}
}

// TestBackendAutoFallsBackWhenIoUringSetupDenied runs the child for EPERM and ENOSYS and checks:
// auto picks epoll, BackendReason names the errno; WithBackend("uring") (and "uring-poll") fails
// with an error wrapping that errno whose text names it; epoll and poll still work.
func TestBackendAutoFallsBackWhenIoUringSetupDenied(t *testing.T) {
	testutil.ChildDenied(t, deniedChildEnv, deniedChild)
	for _, errno := range []syscall.Errno{unix.EPERM, unix.ENOSYS} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			res := runDenied(t, "TestBackendAutoFallsBackWhenIoUringSetupDenied", unix.SYS_IO_URING_SETUP, errno)
			text := errno.Error() // "operation not permitted", "function not implemented"
			if res["auto"] != "epoll" {
				t.Errorf("auto chose %q with io_uring_setup denied (%s), want epoll", res["auto"], text)
			}
			if r := res["auto-reason"]; !strings.Contains(strings.ToLower(r), text) {
				t.Errorf("BackendReason %q does not say %q", r, text)
			}
			for _, name := range []string{"uring", "uring-poll"} {
				e := res[name+"-err"]
				if e == "" || e == "<nil>" {
					t.Errorf("WithBackend(%q) with io_uring_setup denied: no error", name)
				} else if !strings.Contains(strings.ToLower(e), text) {
					t.Errorf("WithBackend(%q) error %q does not say %q", name, e, text)
				}
				if res[name+"-wraps"] != "true" {
					t.Errorf("WithBackend(%q) error does not wrap %s (errors.Is)", name, unix.ErrnoName(errno))
				}
			}
			for _, name := range []string{"epoll", "poll"} {
				if res[name] != "ok" {
					t.Errorf("WithBackend(%q) in the child: %s", name, res[name])
				}
			}
			t.Logf("child: auto=%s reason=%q uring-err=%q", res["auto"], res["auto-reason"], res["uring-err"])
		})
	}
}

// TestBackendAutoFallsBackWhenIoUringEnterDenied: io_uring_setup works but
// io_uring_enter fails with EPERM (a seccomp filter that denies it alone, installed by a child
// process: the test re-executes its own binary). "auto" must not accept a backend whose first
// wait would fail: it chooses epoll, and BackendReason names io_uring_enter; WithBackend("uring")
// and ("uring-poll") fail in New with an error that names io_uring_enter and wraps EPERM.
func TestBackendAutoFallsBackWhenIoUringEnterDenied(t *testing.T) {
	testutil.ChildDenied(t, deniedChildEnv, deniedChild)
	newLoop(t, "uring").Close() // skips where io_uring is switched off or missing even without the filter
	res := runDenied(t, "TestBackendAutoFallsBackWhenIoUringEnterDenied", unix.SYS_IO_URING_ENTER, unix.EPERM)
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
