//go:build linux

package ringev_test

// Tests of choosing a backend where io_uring is denied: auto falls back to epoll and says why,
// and an explicit uring backend fails in New naming the call.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// deniedChildEnv carries "NR:ERRNO" to the child: the system call its seccomp filter denies and
// the errno it returns.
const deniedChildEnv = "RINGEV_TEST_DENIED_CHILD"

// denySyscall installs a seccomp filter on every thread of the process (TSYNC) that makes
// system call nr fail with errno and allows every other call.
func denySyscall(nr uint32, errno syscall.Errno) error {
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
	// seccomp(2) rather than prctl(PR_SET_SECCOMP): only it can apply the filter to every thread
	// (a prctl filter would hold for the calling thread only, and a loop may run on another).
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", e)
	}
	return nil
}

// runDenied runs test (the calling test's name) again in a child process that denies system call
// nr with errno (deniedChild; the test must call deniedChildIfAsked first), and returns what the
// child reported: "seccomp", "auto", "auto-reason", "<backend>-err" and "<backend>-wraps" for
// uring and uring-poll, "<backend>" for epoll and poll ("ok" or the error). A child that cannot
// install its filter skips the test, naming why.
func runDenied(t *testing.T, test string, nr uint32, errno syscall.Errno) map[string]string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("seccomp is Linux only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d", deniedChildEnv, nr, int(errno)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	res := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "DENIED "); ok {
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
	return res
}

// deniedChildIfAsked is the child's side of runDenied: when the environment asks for it, it
// denies the system call, creates loops, prints the results and reports true (the test returns).
func deniedChildIfAsked() bool {
	v := os.Getenv(deniedChildEnv)
	if v == "" {
		return false
	}
	nrs, es, _ := strings.Cut(v, ":")
	nr, err1 := strconv.Atoi(nrs)
	e, err2 := strconv.Atoi(es)
	if err1 != nil || err2 != nil {
		fmt.Printf("DENIED seccomp=bad %s=%q\n", deniedChildEnv, v)
		return true
	}
	errno := syscall.Errno(e)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := denySyscall(uint32(nr), errno); err != nil {
		fmt.Printf("DENIED seccomp=unavailable: %v\n", err)
		return true
	}
	fmt.Println("DENIED seccomp=installed")
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
	return true
}

// TestBackendAutoFallsBackWhenIoUringSetupDenied runs the child for EPERM and ENOSYS and checks:
// auto picks epoll, BackendReason names the errno; WithBackend("uring") (and "uring-poll") fails
// with an error wrapping that errno whose text names it; epoll and poll still work.
func TestBackendAutoFallsBackWhenIoUringSetupDenied(t *testing.T) {
	if deniedChildIfAsked() {
		return
	}
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
	if deniedChildIfAsked() {
		return
	}
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
