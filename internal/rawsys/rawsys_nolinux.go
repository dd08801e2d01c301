//go:build !linux

package rawsys

import "syscall"

// Off Linux the system calls fail with ENOSYS: their numbers and error convention are Linux's
// (ringev's New fails there before it makes any). GStack is nil: there is no loop to check the
// owner of.

// Syscall fails with ENOSYS.
func Syscall(trap, a1, a2, a3 uintptr) (uintptr, syscall.Errno) { return ^uintptr(0), syscall.ENOSYS }

// Syscall6 fails with ENOSYS.
func Syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, syscall.Errno) {
	return ^uintptr(0), syscall.ENOSYS
}

// GStack is nil.
func GStack() *[2]uintptr { return nil }

// FramePointer is 0.
func FramePointer() uintptr { return 0 }
