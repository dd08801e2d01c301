// Package rawsys holds the assembly of ringev's hot path, in one place so that it shares its
// code pages. GStack returns where the runtime keeps the calling goroutine's stack bounds, for
// the loop's ownership check; FramePointer returns the caller's frame pointer, for its nesting
// guard. The system calls here cannot block: a handler's ReadNonblocking and WriteNonblocking,
// a busy loop's epoll_wait(2), an io_uring_enter that does not wait. So they may skip the Go
// runtime's syscall bookkeeping, as unix.RawSyscall does.
//
// On amd64 and arm64 each call is one assembly frame (rawsys_amd64.s, rawsys_arm64.s), where
// unix.RawSyscall takes four (x/sys, syscall, its ABI wrapper, internal/runtime/syscall). That
// makes every call cheaper (`go test -bench . ./internal/rawsys`; the figures are in
// docs/design.md, "Where the time goes"). On other Linux architectures they are
// unix.RawSyscall and unix.RawSyscall6, and FramePointer is 0 (rawsys_other.go). Off Linux
// they fail with ENOSYS, GStack returns nil and FramePointer 0 (rawsys_nolinux.go).
//
// As with syscall.Syscall, convert a pointer argument to uintptr in the call expression
// itself: what it points to then stays alive and in place for the call.
package rawsys
