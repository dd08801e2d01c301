package server

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Linux calls the shared files make; sys_other.go has the same names elsewhere (macOS, the
// BSDs), where ringev.New fails first.

// sockFlags makes an accepted or new socket non-blocking and close-on-exec in the same call
// (SOCK_NONBLOCK|SOCK_CLOEXEC).
const sockFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC

// accept4 is accept4(2) with sockFlags.
func accept4(fd int) (int, error) {
	nfd, _, err := unix.Accept4(fd, sockFlags)
	return nfd, err
}

// eventfd is eventfd(2), non-blocking and close-on-exec, with a count of 0.
func eventfd() (int, error) {
	return unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
}

// usableCPUs is the number of CPUs the process may run on (its affinity mask), at least 1.
func usableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		return set.Count()
	}
	return max(1, runtime.NumCPU())
}

// memoryLimit is the memory the process may use, in bytes: the least of the machine's RAM
// (sysinfo(2)), the cgroup's memory limit (cgroup v2's memory.max, v1's
// memory.limit_in_bytes, as the process sees its cgroup filesystem) and GOMEMLIMIT.
func memoryLimit() int64 {
	limit := int64(math.MaxInt64)
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil && si.Totalram > 0 {
		limit = int64(si.Totalram) * int64(max(si.Unit, 1))
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(f); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
				limit = min(limit, n) // "max" (no limit) does not parse
			}
		}
	}
	return min(limit, debug.SetMemoryLimit(-1))
}

// peerName is the peer's address of TCP socket fd, from getsockopt(2) SO_PEERNAME, which, unlike
// getpeername(2), still answers once a reset has closed the connection. The option takes the
// address's exact size (EINVAL for a larger one): IPv6's is tried, then IPv4's.
func peerName(fd int) (unix.Sockaddr, error) {
	var raw unix.RawSockaddrAny
	for _, size := range [2]uint32{unix.SizeofSockaddrInet6, unix.SizeofSockaddrInet4} {
		n := size
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERNAME,
			uintptr(unsafe.Pointer(&raw)), uintptr(unsafe.Pointer(&n)), 0)
		if e == unix.EINVAL {
			continue
		}
		if e != 0 {
			return nil, fmt.Errorf("server: getsockopt(SO_PEERNAME) of fd %d: %w", fd, e)
		}
		switch raw.Addr.Family {
		case unix.AF_INET:
			p := (*unix.RawSockaddrInet4)(unsafe.Pointer(&raw))
			return &unix.SockaddrInet4{Port: int(netPort(&p.Port)), Addr: p.Addr}, nil
		case unix.AF_INET6:
			p := (*unix.RawSockaddrInet6)(unsafe.Pointer(&raw))
			return &unix.SockaddrInet6{Port: int(netPort(&p.Port)), ZoneId: p.Scope_id, Addr: p.Addr}, nil
		}
		return nil, fmt.Errorf("server: getsockopt(SO_PEERNAME) of fd %d: address family %d", fd, raw.Addr.Family)
	}
	return nil, fmt.Errorf("server: getsockopt(SO_PEERNAME) of fd %d: %w", fd, unix.EINVAL)
}
