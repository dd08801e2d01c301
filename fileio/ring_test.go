//go:build linux

package fileio_test

// Tests of NewRing: options, modes, and the fallback to ModeThreads where io_uring is denied
// (a seccomp filter, as Docker's default profile, in a child process).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
	"github.com/ringev/ringev/internal/testutil"
)

func TestRingRejectsBadOptions(t *testing.T) {
	for _, c := range []struct {
		opt  fileio.Option
		name string
	}{
		{fileio.WithMode("bogus"), "WithMode"},
		{fileio.WithEntries(0), "WithEntries"},
		{fileio.WithEntries(1 << 16), "WithEntries"},
		{fileio.WithDeputy(0), "WithDeputy"},
		{fileio.WithThreads(0), "WithThreads"},
		{fileio.WithSQIdle(-1), "WithSQIdle"},
	} {
		r, err := fileio.NewRing(c.opt)
		if err == nil {
			r.Close()
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: error %v does not wrap EINVAL and name the option", c.name, err)
		}
	}
}

func TestRingUsesTheModeAskedFor(t *testing.T) {
	for _, m := range ringModes {
		t.Run(string(m), func(t *testing.T) {
			requireMode(t, m)
			r := newRing(t, fileio.WithMode(m))
			if r.Mode() != m {
				t.Errorf("Mode() = %q, want %q", r.Mode(), m)
			}
			if r.Reason() != "" {
				t.Errorf("Reason() = %q for a mode asked for by name, want empty", r.Reason())
			}
		})
	}
}

func TestRingAutoUsesTheDefaultMode(t *testing.T) {
	requireMode(t, fileio.ModeDefault)
	r := newRing(t)
	if r.Mode() != fileio.ModeDefault {
		t.Errorf("Mode() = %q, want ModeDefault %q", r.Mode(), fileio.ModeDefault)
	}
	if !strings.Contains(r.Reason(), string(fileio.ModeDefault)) {
		t.Errorf("Reason() = %q does not name the default mode", r.Reason())
	}
}

// deniedEnv carries "NR:ERRNO" to the child of testutil.RunDenied.
const deniedEnv = "RINGEV_FILEIO_DENIED"

// deniedChild is the child's side of testutil.RunDenied, with the system call denied (errno):
// it makes rings and uses a file, printing what happened.
func deniedChild(errno syscall.Errno) {
	r, err := fileio.NewRing()
	if err != nil {
		fmt.Printf("DENIED auto=error: %v\n", err)
	} else {
		fmt.Printf("DENIED auto=%s\nDENIED reason=%s\nDENIED io=%s\n", r.Mode(), r.Reason(), useFile(r))
		r.Close()
	}
	r, err = fileio.NewRing(fileio.WithMode(fileio.ModeDeferTaskrun))
	if err == nil {
		r.Close()
	}
	fmt.Printf("DENIED named-err=%v\nDENIED named-wraps=%v\n", err, errors.Is(err, errno))
}

// useFile writes, reads back and syncs a file on r: "ok" or what failed.
func useFile(r *fileio.Ring) string {
	dir, err := os.MkdirTemp("", "fileio-denied-")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(dir)
	f, err := r.Open(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("fallback"), 3); err != nil {
		return err.Error()
	}
	buf := make([]byte, 8)
	if _, err := f.ReadAt(buf, 3); err != nil || string(buf) != "fallback" {
		return fmt.Sprintf("read %q, %v", buf, err)
	}
	if err := f.Sync(); err != nil {
		return err.Error()
	}
	return "ok"
}

func TestRingFallsBackToThreadsWhenIoUringSetupIsDenied(t *testing.T) {
	testutil.ChildDenied(t, deniedEnv, deniedChild)
	for _, errno := range []syscall.Errno{unix.EPERM, unix.ENOSYS} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			res := testutil.RunDenied(t, "TestRingFallsBackToThreadsWhenIoUringSetupIsDenied", deniedEnv, unix.SYS_IO_URING_SETUP, errno)
			checkFallback(t, res, errno, "io_uring_setup")
		})
	}
}

func TestRingFallsBackToThreadsWhenIoUringEnterIsDenied(t *testing.T) {
	testutil.ChildDenied(t, deniedEnv, deniedChild)
	requireIoUring(t)
	res := testutil.RunDenied(t, "TestRingFallsBackToThreadsWhenIoUringEnterIsDenied", deniedEnv, unix.SYS_IO_URING_ENTER, unix.EPERM)
	checkFallback(t, res, unix.EPERM, "NOP")
}

// TestRingAutoFallsBackToDeferTaskrunWhenIoUringRegisterIsDenied denies io_uring_register(2)
// alone: ModeDefault cannot register its eventfd, and ModeAuto runs ModeDeferTaskrun (whose
// registrations are optional) instead of the thread pool, and says why.
func TestRingAutoFallsBackToDeferTaskrunWhenIoUringRegisterIsDenied(t *testing.T) {
	testutil.ChildDenied(t, deniedEnv, deniedChild)
	requireMode(t, fileio.ModeDeferTaskrun)
	if fileio.ModeDefault == fileio.ModeDeferTaskrun {
		t.Skip("the default mode is defer-taskrun: there is nothing to fall back from")
	}
	res := testutil.RunDenied(t, "TestRingAutoFallsBackToDeferTaskrunWhenIoUringRegisterIsDenied", deniedEnv, unix.SYS_IO_URING_REGISTER, unix.EPERM)
	if res["auto"] != string(fileio.ModeDeferTaskrun) {
		t.Errorf("auto chose %q, want %q (reason %q)", res["auto"], fileio.ModeDeferTaskrun, res["reason"])
	}
	if r := res["reason"]; !strings.Contains(r, unix.EPERM.Error()) || !strings.Contains(r, string(fileio.ModeDefault)) {
		t.Errorf("Reason %q does not name %s and %q", r, fileio.ModeDefault, unix.EPERM.Error())
	}
	if res["io"] != "ok" {
		t.Errorf("file I/O on the fallback: %s", res["io"])
	}
}

// checkFallback checks a denied child's report: ModeAuto ran ModeThreads and said why, naming
// the errno and what failed; files worked; a mode asked for by name failed with the errno.
func checkFallback(t *testing.T, res map[string]string, errno syscall.Errno, what string) {
	t.Helper()
	text := errno.Error()
	if res["auto"] != string(fileio.ModeThreads) {
		t.Errorf("auto chose %q, want %q", res["auto"], fileio.ModeThreads)
	}
	if r := res["reason"]; !strings.Contains(r, text) || !strings.Contains(r, what) {
		t.Errorf("Reason %q does not say %q and %q", r, text, what)
	}
	if res["io"] != "ok" {
		t.Errorf("file I/O on the fallback: %s", res["io"])
	}
	if e := res["named-err"]; e == "<nil>" || !strings.Contains(e, text) {
		t.Errorf("WithMode(defer-taskrun): error %q does not say %q", e, text)
	}
	if res["named-wraps"] != "true" {
		t.Errorf("WithMode(defer-taskrun): the error does not wrap %s", unix.ErrnoName(errno))
	}
}

// processThreads counts the process's threads (/proc/self/task: Go's, and io_uring's kernel
// threads of the process).
func processThreads(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("reading /proc/self/task: %v", err)
	}
	return len(ents)
}

// TestRingNetpollOwnerHoldsNoThread opens many ModeNetpoll rings, reads through each of them
// from concurrent goroutines, and counts the process's threads while every owner sleeps: an
// owner locked to its thread (as in the other io_uring modes) would hold one thread per ring.
func TestRingNetpollOwnerHoldsNoThread(t *testing.T) {
	requireMode(t, fileio.ModeNetpoll)
	checkOwnersHoldNoThread(t, fileio.WithMode(fileio.ModeNetpoll))
}

// TestRingDefaultOwnerHoldsNoThread does the same with rings made without WithMode: the
// default mode's owner holds no OS thread while it waits.
func TestRingDefaultOwnerHoldsNoThread(t *testing.T) {
	requireMode(t, fileio.ModeDefault)
	checkOwnersHoldNoThread(t)
}

// checkOwnersHoldNoThread opens many rings with opts, reads through each of them from
// concurrent goroutines (every read through the ring), and counts the process's threads
// while every owner sleeps: an owner locked to its thread would hold one thread per ring, and
// the count would grow by at least the number of rings. Go's own threads (one per P, a
// netpoller, spinning ones) may grow by a few; it allows half the number of rings.
func checkOwnersHoldNoThread(t *testing.T, opts ...fileio.Option) {
	t.Helper()
	path := tempFile(t, pattern(1<<16))
	rings := 32 + 2*runtime.GOMAXPROCS(0)
	before := processThreads(t)
	rs := make([]*fileio.Ring, rings)
	files := make([]*fileio.File, rings)
	for i := range files {
		rs[i] = newRing(t, append(opts, fileio.WithPageCacheFirst(false))...)
		files[i] = openFile(t, rs[i], path, os.O_RDONLY)
	}
	errs := make(chan error, rings)
	for _, f := range files {
		go func() {
			buf := make([]byte, 4096)
			var err error
			for j := range 20 {
				if _, err = f.ReadAt(buf, int64(j%16)*4096); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	awaitErrs(t, "reads", errs, rings, waitTimeout)
	for _, r := range rs {
		if r.Stats().RingOps == 0 {
			t.Fatalf("a ring ran no operation: the reads did not reach the owners")
		}
	}
	after := processThreads(t)
	if after-before >= rings/2 {
		t.Errorf("%d rings (mode %s) with sleeping owners: %d threads, %d before; want fewer than %d more",
			rings, rs[0].Mode(), after, before, rings/2)
	}
}

// TestRingNetpollRetriesWorkOfAnExitedThread writes and syncs a file on a disk file system
// (work the kernel hands to io-wq workers, which belong to the submitting thread) while
// goroutines end locked to their threads, so that Go ends threads that may have run the owner.
// Work of such a thread not yet started comes back -ECANCELED; nobody asked for that, and no
// call may fail with it.
func TestRingNetpollRetriesWorkOfAnExitedThread(t *testing.T) {
	requireMode(t, fileio.ModeNetpoll)
	dir, err := os.Getwd() // the package's directory: a disk, where t.TempDir may be tmpfs
	if err != nil {
		t.Fatal(err)
	}
	dir, err = os.MkdirTemp(dir, "netpoll-exit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := newRing(t, fileio.WithMode(fileio.ModeNetpoll))
	f := openFile(t, r, filepath.Join(dir, "data"), os.O_CREATE|os.O_RDWR)
	const writers, writes = 16, 100
	errs := make(chan error, writers)
	for g := range writers {
		go func() {
			buf := make([]byte, 64<<10)
			for i := range writes {
				exited := make(chan struct{})
				go func() { runtime.LockOSThread(); close(exited) }() // its thread ends with it
				_, err := f.WriteAt(buf, int64(g*writes+i)*int64(len(buf)))
				if err == nil && i%4 == 0 {
					err = f.Sync()
				}
				<-exited
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	awaitErrs(t, "writes while threads exit", errs, writers, 6*waitTimeout)
}
