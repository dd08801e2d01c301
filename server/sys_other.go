//go:build unix && !linux

package server

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// Off Linux the package builds, but no server runs: ringev.New fails there first.

const sockFlags = 0

func accept4(int) (int, error) {
	return -1, fmt.Errorf("server: accept4(2) on %s: %w", runtime.GOOS, unix.ENOSYS)
}

func eventfd() (int, error) {
	return -1, fmt.Errorf("server: eventfd(2) on %s: %w", runtime.GOOS, unix.ENOSYS)
}

func peerName(int) (unix.Sockaddr, error) {
	return nil, fmt.Errorf("server: SO_PEERNAME on %s: %w", runtime.GOOS, unix.ENOPROTOOPT)
}

func usableCPUs() int { return max(1, runtime.NumCPU()) }

// memoryLimit is the least of GOMEMLIMIT and 1 GiB (no server runs here: see above).
func memoryLimit() int64 { return min(1<<30, debug.SetMemoryLimit(-1)) }
