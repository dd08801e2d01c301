package testutil

import (
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
)

// DenySyscall installs a seccomp filter on every thread of the process (SECCOMP_FILTER_FLAG_TSYNC)
// that makes system call nr fail with errno and allows every other call, as a container's policy
// does (Docker's default profile denies io_uring_setup with EPERM). It cannot be undone: call it
// in a child process (a test binary re-executed for one test). Errors wrap the prctl(2) or
// seccomp(2) errno, or name a GOARCH without a seccomp audit arch.
func DenySyscall(nr uint32, errno syscall.Errno) error {
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
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", e)
	}
	return nil
}

// RunDenied reruns the test named test (the caller) in a child process of the test binary whose
// environment sets env to "NR:ERRNO"; the child (ChildDenied, the test's opening) denies system
// call nr with errno before it does what the test checks. It returns the KEY=VALUE pairs the
// child printed on lines that start with "DENIED ". A child that cannot install its filter skips the test, naming why;
// a child that fails, or does not say it installed the filter, fails it.
func RunDenied(t testing.TB, test, env string, nr uint32, errno syscall.Errno) map[string]string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("seccomp is Linux only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d", env, nr, int(errno)))
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
	switch s := res["seccomp"]; {
	case strings.HasPrefix(s, "unavailable"):
		t.Skipf("the child cannot install a seccomp filter here: %s", s)
	case s != "installed":
		t.Fatalf("the child did not install its filter:\n%s", out)
	}
	return res
}

// ChildDenied is the opening of a test that RunDenied reruns: in that child (env set) it
// denies the system call env names (denyFromEnv), then, if the filter is on, runs child with
// its errno (child prints the "DENIED key=value" lines the parent reads), and ends the test
// there (a skip: the parent checks what the child printed). Elsewhere it does nothing.
func ChildDenied(t *testing.T, env string, child func(errno syscall.Errno)) {
	t.Helper()
	isChild, installed := denyFromEnv(env)
	if !isChild {
		return
	}
	if installed {
		_, es, _ := strings.Cut(os.Getenv(env), ":")
		e, _ := strconv.Atoi(es) // (denyFromEnv parsed it)
		child(syscall.Errno(e))
	}
	t.Skip("the child of RunDenied: the parent checks what it printed")
}

// denyFromEnv is ChildDenied's filter. When env is set, it denies the system call env names
// with its errno (DenySyscall) and prints "DENIED seccomp=installed", or why not ("DENIED
// seccomp=unavailable: ..." or "=bad ..."), and reports child true and whether the filter is
// on. When env is not set it does nothing and reports false.
func denyFromEnv(env string) (child, installed bool) {
	v := os.Getenv(env)
	if v == "" {
		return false, false
	}
	nrs, es, _ := strings.Cut(v, ":")
	nr, err1 := strconv.Atoi(nrs)
	e, err2 := strconv.Atoi(es)
	if err1 != nil || err2 != nil {
		fmt.Printf("DENIED seccomp=bad %s=%q\n", env, v)
		return true, false
	}
	if err := DenySyscall(uint32(nr), syscall.Errno(e)); err != nil {
		fmt.Printf("DENIED seccomp=unavailable: %v\n", err)
		return true, false
	}
	fmt.Println("DENIED seccomp=installed")
	return true, true
}
