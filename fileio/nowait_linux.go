package fileio

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/rawsys"
)

// The page-cache path: preadv2(2) with RWF_NOWAIT (Linux 4.14) copies what the page cache
// holds and returns EAGAIN instead of waiting for the device (a read that finds part of the
// range cached returns that part). It cannot wait for I/O, so it goes through
// rawsys.Syscall6, without the Go runtime's system-call bookkeeping: the thread is not
// handed off, and the goroutine keeps its P for the microsecond the copy takes.

// preadNowait reads p at off from the page cache; errno is unix.EAGAIN when it is not cached.
func preadNowait(fd int, p []byte, off int64) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	iov := unix.Iovec{Base: unsafe.SliceData(p), Len: uint64(len(p))}
	n, errno := rawsys.Syscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1,
		uintptr(off), 0, unix.RWF_NOWAIT)
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}

// preadvNowait is preadNowait for an iovec array.
func preadvNowait(fd int, iovs []unix.Iovec, off int64) (int, unix.Errno) {
	if len(iovs) == 0 {
		return 0, 0
	}
	n, errno := rawsys.Syscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iovs[0])), uintptr(len(iovs)),
		uintptr(off), 0, unix.RWF_NOWAIT)
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}
