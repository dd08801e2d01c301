package testutil

import (
	"fmt"
	"runtime"
	"syscall"
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
