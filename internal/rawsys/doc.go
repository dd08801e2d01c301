// Package rawsys holds the assembly of ringev's hot path, in one place so that it shares its
// code pages: GStack, where the runtime keeps the calling goroutine's stack bounds (the loop's
// ownership check), and the
// system calls that cannot block (a handler's ReadNonblocking and WriteNonblocking, a busy
// loop's epoll_wait(2), an io_uring_enter that does not wait), which may therefore skip the Go
// runtime's syscall bookkeeping, as unix.RawSyscall does.
//
// On amd64 and arm64 each call is one assembly frame (rawsys_amd64.s, rawsys_arm64.s) instead
// of unix.RawSyscall's four (x/sys, syscall, its ABI wrapper, internal/runtime/syscall):
// measured on a 2-vCPU PTI machine, a pipe read or write costs about 80 ns less per call
// (`go test -bench . ./internal/rawsys`). Elsewhere they are unix.RawSyscall and
// unix.RawSyscall6 (rawsys_other.go).
//
// As with syscall.Syscall, a pointer argument must be converted to uintptr in the call
// expression itself, so that what it points to stays alive and in place for the call.
package rawsys
