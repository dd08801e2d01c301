//go:build linux

package ringev

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Shared with sigexact_amd64.s's handler, which updates them atomically from any thread.
var (
	sigexactCounts  [65]uint64      // deliveries per signal number since the process started
	sigexactPending uint32          // nonzero: a delivery not yet looked at by the owning loop
	sigexactWakeFd  int64      = -1 // the eventfd the handler writes to wake the owning loop
)

// sigexactOne is what the handler writes to sigexactWakeFd.
//
//lint:ignore U1000 used by sigexact_amd64.s
var sigexactOne uint64 = 1

// sigexactAddrs returns the addresses of the assembly handler and restorer.
func sigexactAddrs() (handler, restorer uintptr)

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on x86-64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const (
	saOnstack  = 0x08000000
	saRestart  = 0x10000000
	saRestorer = 0x04000000
)

// sigexactInstall installs the counting handler for sig and returns the action it replaced.
// The handler runs on the alternate signal stack that the Go runtime gives every thread, with
// SA_RESTART so that interrupted system calls resume as under the runtime's own handler.
func sigexactInstall(sig syscall.Signal) (kernelSigaction, error) {
	h, r := sigexactAddrs()
	act := kernelSigaction{handler: h, flags: saOnstack | saRestart | saRestorer, restorer: r}
	var old kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)),
		uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return old, fmt.Errorf("ringev: rt_sigaction(%v): %w", sig, e)
	}
	return old, nil
}

// sigexactRestore puts back the action sigexactInstall replaced, if the loop's handler is still
// the one installed: when something else in the process installed its own meanwhile
// (signal.Ignore, or signal.Notify for a signal the runtime did not handle before), that stays.
func sigexactRestore(sig syscall.Signal, old kernelSigaction) error {
	var cur kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&cur)), 8, 0, 0); e != 0 {
		return fmt.Errorf("ringev: rt_sigaction(%v) reading the current action: %w", sig, e)
	}
	if h, _ := sigexactAddrs(); cur.handler != h {
		return nil
	}
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0); e != 0 {
		return fmt.Errorf("ringev: rt_sigaction(%v) restoring the Go runtime's handler: %w", sig, e)
	}
	return nil
}

const sigexactSupported = true
