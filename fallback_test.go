package ringev_test

// Fallback (issue 4 item 7): when io_uring cannot be set up, "auto" selects epoll and
// BackendReason says why, and asking for "uring" by name returns an error that says why. Tested
// for real: the test re-executes its own binary, and the child installs a seccomp filter (on every
// thread, SECCOMP_FILTER_FLAG_TSYNC) that makes io_uring_setup(2) fail with a chosen errno before
// it creates any loop.

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

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
)

// fallbackChildEnv carries the errno the child's seccomp filter returns for io_uring_setup.
const fallbackChildEnv = "RINGEV_TEST_FALLBACK_CHILD_ERRNO"

// denyIoUringSetup installs a seccomp filter on every thread of the process that makes
// io_uring_setup(2) fail with errno and allows every other system call.
func denyIoUringSetup(errno syscall.Errno) error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("no seccomp audit arch for GOARCH %s", runtime.GOARCH)
	}
	const (
		offNr   = 0 // struct seccomp_data: int nr; __u32 arch; ...
		offArch = 4
	)
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArch},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 3, K: arch}, // other arch: allow
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNr},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
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

// TestFallbackWhenIoUringSetupDenied runs the child for EPERM and ENOSYS and checks: auto picks
// epoll, BackendReason names the errno; WithBackend("uring") (and "uring-poll") fails with an
// error wrapping that errno whose text names it; epoll and poll still work.
func TestFallbackWhenIoUringSetupDenied(t *testing.T) {
	if v := os.Getenv(fallbackChildEnv); v != "" {
		fallbackChild(t, v)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("seccomp is Linux only")
	}
	for _, errno := range []syscall.Errno{unix.EPERM, unix.ENOSYS} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFallbackWhenIoUringSetupDenied$", "-test.count=1", "-test.v", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), fallbackChildEnv+"="+strconv.Itoa(int(errno)))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child failed: %v\n%s", err, out)
			}
			res := map[string]string{}
			for _, line := range strings.Split(string(out), "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), "FALLBACK "); ok && k == "" {
					key, val, _ := strings.Cut(v, "=")
					res[key] = val
				}
			}
			if s := res["seccomp"]; strings.HasPrefix(s, "unavailable") {
				t.Skipf("the child cannot install a seccomp filter here: %s", s)
			}
			if res["seccomp"] != "installed" {
				t.Fatalf("child did not install its filter:\n%s", out)
			}
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

// fallbackChild is the child's side: install the filter, create loops, print the results.
func fallbackChild(t *testing.T, errnoStr string) {
	n, err := strconv.Atoi(errnoStr)
	if err != nil {
		t.Fatalf("bad %s=%q", fallbackChildEnv, errnoStr)
	}
	errno := syscall.Errno(n)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := denyIoUringSetup(errno); err != nil {
		fmt.Printf("FALLBACK seccomp=unavailable: %v\n", err)
		return
	}
	fmt.Println("FALLBACK seccomp=installed")
	l, err := ringev.New()
	if err != nil {
		fmt.Printf("FALLBACK auto=error: %v\n", err)
	} else {
		fmt.Printf("FALLBACK auto=%s\nFALLBACK auto-reason=%s\n", l.Backend(), l.BackendReason())
		l.Close()
	}
	for _, name := range []string{"uring", "uring-poll"} {
		l, err := ringev.New(ringev.WithBackend(name))
		if err == nil {
			l.Close()
		}
		fmt.Printf("FALLBACK %s-err=%v\nFALLBACK %s-wraps=%v\n", name, err, name, errors.Is(err, errno))
	}
	for _, name := range []string{"epoll", "poll"} {
		l, err := ringev.New(ringev.WithBackend(name))
		if err != nil {
			fmt.Printf("FALLBACK %s=%v\n", name, err)
			continue
		}
		fmt.Printf("FALLBACK %s=ok\n", name)
		l.Close()
	}
}
