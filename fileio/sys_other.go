//go:build unix && !linux

package fileio

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Off Linux there is no io_uring: ModeAuto runs ModeThreads, an io_uring mode asked for by
// name fails with errPlatform, and the pool makes the portable calls (pread(2), pwrite(2),
// fsync(2)). The stand-ins below are never reached.

// errPlatform is startUring's error off Linux.
var errPlatform = fmt.Errorf("fileio: io_uring is Linux's, and this is %s: %w", runtime.GOOS, errors.ErrUnsupported)

// uringEngine is never made off Linux.
type uringEngine struct{ engine }

// startUring fails: io_uring is Linux's.
func startUring(_ *Ring, mode Mode) (*uringEngine, error) {
	return nil, fmt.Errorf("fileio: WithMode(%q): %w", mode, errPlatform)
}

// haveNowait: no RWF_NOWAIT off Linux, so reads go to the pool.
const haveNowait = false

func preadNowait(int, []byte, int64) (int, unix.Errno)        { return 0, unix.ENOSYS }
func preadvNowait(int, []unix.Iovec, int64) (int, unix.Errno) { return 0, unix.ENOSYS }

// isDirect: O_DIRECT is Linux's here (FreeBSD's is passed through to open(2), but a short
// read is not taken for the end of the file).
func isDirect(int) bool { return false }

func dioAlign(int) (mem, off uint32) { return 0, 0 }

// iovec returns the iovec of b (len(b) > 0).
func iovec(b []byte) unix.Iovec {
	v := unix.Iovec{Base: &b[0]}
	v.SetLen(len(b))
	return v
}

// run makes o's system call on a pool thread and returns its result (bytes or -errno).
// Vectored operations are one pread or pwrite per buffer, stopping at a short one;
// Datasync is fsync(2).
func run(o *op) int32 {
	fd := o.file.fd
	var n int
	var err error
	switch o.kind {
	case kindRead, kindReadFixed:
		n, err = unix.Pread(fd, o.buf, o.off)
	case kindWrite, kindWriteFixed:
		n, err = unix.Pwrite(fd, o.buf, o.off)
	case kindReadv, kindWritev:
		off := o.off
		for _, v := range o.iovs {
			b := unsafe.Slice(v.Base, v.Len)
			var m int
			if o.kind == kindReadv {
				m, err = unix.Pread(fd, b, off)
			} else {
				m, err = unix.Pwrite(fd, b, off)
			}
			if err != nil {
				if n > 0 {
					err = nil
				}
				break
			}
			n += m
			off += int64(m)
			if m < len(b) {
				break
			}
		}
	case kindFsync, kindFdatasync:
		err = unix.Fsync(fd)
	}
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			return -int32(errno)
		}
		return -int32(unix.EIO)
	}
	return int32(n)
}
