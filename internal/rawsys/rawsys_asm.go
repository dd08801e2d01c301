//go:build linux && (amd64 || arm64)

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

// GStack returns where the runtime keeps the calling goroutine's stack bounds, [lo, hi): the
// first field of its runtime g (runtime2.go: "stack stack // offset known to runtime/cgo"),
// (the g's address, read from thread-local storage or the g register). It is valid while the goroutine lives; the runtime rewrites
// it when the stack moves. Callers check that the bounds hold their own stack before relying
// on them.
func GStack() *[2]uintptr

// FramePointer returns the caller's frame pointer: the address of its frame record, whose first
// word is its caller's frame pointer and whose second is its own return address (Go keeps frame
// pointers on amd64 and arm64; the runtime's tracer walks them the same way). Valid until the
// caller's stack moves.
func FramePointer() uintptr
