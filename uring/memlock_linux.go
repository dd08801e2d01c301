package uring

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The kernel charges the memory io_uring pins to the caller's RLIMIT_MEMLOCK
// when the caller lacks CAP_IPC_LOCK: registered buffers on every release,
// and the ring itself (SQ/CQ rings, SQEs) before 5.12 and again on recent
// kernels, where rings and provided-buffer rings are memory regions charged
// the same way (6.18 fails io_uring_setup with ENOMEM under a small limit).
// An ENOMEM from those calls says nothing of that, so the binding's error
// names the limit.

// memlockCharged reports whether the kernel charges the memory of
// io_uring_register(2) opcode op to RLIMIT_MEMLOCK.
func memlockCharged(op uint32) bool {
	switch op &^ RegisterUseRegisteredRing {
	case RegisterBuffers, RegisterBuffers2, RegisterBuffersUpdate, RegisterPbufRing,
		RegisterCloneBuffers, RegisterResizeRings, RegisterMemRegion, RegisterZcrxIfq:
		return true
	}
	return false
}

// explainMemlock adds to an ENOMEM error from a call that pins what (for
// example "ring memory") the caller's RLIMIT_MEMLOCK and whether it holds
// CAP_IPC_LOCK, read now. Other errors are returned as they are. The errno
// stays wrapped.
func explainMemlock(err error, what string) error {
	if !errors.Is(err, unix.ENOMEM) {
		return err
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) != nil {
		lim.Cur = unix.RLIM_INFINITY
	}
	return fmt.Errorf("%w (%s)", err, memlockReason(what, lim.Cur, hasCapIPCLock()))
}

// memlockReason explains an ENOMEM from a call that pins what, given the soft
// RLIMIT_MEMLOCK in bytes (unix.RLIM_INFINITY: unlimited) and whether the
// caller holds CAP_IPC_LOCK.
func memlockReason(what string, limit uint64, capIPCLock bool) string {
	lim := "unlimited"
	if limit != unix.RLIM_INFINITY {
		lim = fmt.Sprintf("%d bytes", limit)
	}
	if capIPCLock {
		return fmt.Sprintf("CAP_IPC_LOCK is held, so RLIMIT_MEMLOCK (%s) does not limit %s: "+
			"the kernel or the memory cgroup is short of memory", lim, what)
	}
	return fmt.Sprintf("the kernel charges %s to RLIMIT_MEMLOCK for a caller without CAP_IPC_LOCK, "+
		"and RLIMIT_MEMLOCK is %s here: raise it (ulimit -l, setrlimit(2), LimitMEMLOCK= in a systemd unit), "+
		"grant CAP_IPC_LOCK, or ask for less memory", what, lim)
}

// hasCapIPCLock reports whether the calling thread's effective capabilities
// include CAP_IPC_LOCK (false when capget(2) fails).
func hasCapIPCLock() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[unix.CAP_IPC_LOCK/32].Effective&(1<<(unix.CAP_IPC_LOCK%32)) != 0
}
