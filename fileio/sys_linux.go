package fileio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// What the shared files need of Linux: O_DIRECT's flag and alignments, the page-cache read,
// and the pool's system calls.

// haveNowait: preadv2(2) with RWF_NOWAIT exists (Linux 4.14; an older kernel's ENOSYS or
// EOPNOTSUPP turns it off for the file).
const haveNowait = true

// isDirect reports whether the open flags fl include O_DIRECT.
func isDirect(fl int) bool { return fl&unix.O_DIRECT != 0 }

// dioAlign returns the O_DIRECT alignments of fd (statx(2) STATX_DIOALIGN, Linux 6.1) of a
// buffer's address and of offsets and lengths; 0, 0 when the kernel does not say.
func dioAlign(fd int) (mem, off uint32) {
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &stx) == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
		return stx.Dio_mem_align, stx.Dio_offset_align
	}
	return 0, 0
}

// iovec returns the iovec of b (len(b) > 0).
func iovec(b []byte) unix.Iovec { return unix.Iovec{Base: &b[0], Len: uint64(len(b))} }

// run makes o's system call on a pool thread and returns its result (bytes or -errno).
func run(o *op) int32 {
	fd := o.file.fd
	for {
		var r uintptr
		var errno unix.Errno
		switch o.kind {
		case kindRead, kindReadFixed:
			r, _, errno = unix.Syscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(o.buf))),
				uintptr(len(o.buf)), uintptr(o.off), 0, 0)
		case kindWrite, kindWriteFixed:
			r, _, errno = unix.Syscall6(unix.SYS_PWRITE64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(o.buf))),
				uintptr(len(o.buf)), uintptr(o.off), 0, 0)
		case kindReadv:
			r, _, errno = unix.Syscall6(unix.SYS_PREADV, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(o.iovs))),
				uintptr(len(o.iovs)), uintptr(o.off), 0, 0)
		case kindWritev:
			r, _, errno = unix.Syscall6(unix.SYS_PWRITEV, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(o.iovs))),
				uintptr(len(o.iovs)), uintptr(o.off), 0, 0)
		case kindFsync:
			_, _, errno = unix.Syscall(unix.SYS_FSYNC, uintptr(fd), 0, 0)
		case kindFdatasync:
			_, _, errno = unix.Syscall(unix.SYS_FDATASYNC, uintptr(fd), 0, 0)
		}
		switch errno {
		case 0:
			return int32(r)
		case unix.EINTR:
			continue
		}
		return -int32(errno)
	}
}
