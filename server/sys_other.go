//go:build unix && !linux

package server

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Off Linux the package builds, but no server runs: ringev.New fails there first.

const sockFlags = 0

func accept4(int) (int, error) {
	return -1, fmt.Errorf("server: accept4(2) on %s: %w", runtime.GOOS, unix.ENOSYS)
}
