//go:build linux && !amd64 && !arm64

package rawsys

import "golang.org/x/sys/unix"

// Syscall makes system call trap with three arguments through unix.RawSyscall and returns its
// result and errno (0 on success). Only for calls that cannot block. It is nosplit, like the
// calls it makes, so its caller's stack cannot move while a pointer converted to uintptr is in
// flight.
//
//go:nosplit
func Syscall(trap, a1, a2, a3 uintptr) (uintptr, unix.Errno) {
	r, _, e := unix.RawSyscall(trap, a1, a2, a3)
	return r, e
}

// Syscall6 is Syscall with six arguments, through unix.RawSyscall6.
//
//go:nosplit
func Syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, unix.Errno) {
	r, _, e := unix.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	return r, e
}

// GStack is nil where no assembly reads the g pointer: callers' ownership checks are off there.
func GStack() *[2]uintptr { return nil }

// FramePointer is 0 where Go keeps no frame pointers: callers walk the stack another way.
func FramePointer() uintptr { return 0 }
