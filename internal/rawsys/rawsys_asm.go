//go:build amd64 || arm64

package rawsys

import "golang.org/x/sys/unix"

// Syscall makes system call trap with three arguments and returns its result, or -1 and the
// errno (0 on success). Only for calls that cannot block.
//
//go:noescape
func Syscall(trap, a1, a2, a3 uintptr) (r1 uintptr, errno unix.Errno)

// Syscall6 is Syscall with six arguments.
//
//go:noescape
func Syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1 uintptr, errno unix.Errno)

// Getg returns the address of the calling goroutine's runtime g: an identity for the
// goroutine, valid while it lives.
func Getg() uintptr
