package server

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

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
