//go:build unix && !linux

package ringev

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Off Linux the package builds, so that code written against it compiles everywhere, but New
// fails with errPlatform. The names below stand in for sys_linux.go's and the Linux backends'
// and are never reached.

// errPlatform is New's error off Linux.
var errPlatform = fmt.Errorf("ringev: %s is not supported: every backend (io_uring, epoll, ppoll(2) with an eventfd wake-up) is Linux's: %w",
	runtime.GOOS, errors.ErrUnsupported)

// platformErr is New's first check.
func platformErr() error { return errPlatform }

// readyFd has struct epoll_event's fields (see sys_linux.go).
type readyFd struct {
	Events uint32
	Fd     int32
	Pad    int32
}

const (
	pollRdHup     = 0
	sysEpollPwait = 0
	sysPread      = 0
	sysPwrite     = 0
	sysAccept4    = 0
	maxBatchWait  = 1024
	eTime         = unix.ETIMEDOUT
)

func newEventfd() (int, error)                       { return -1, errPlatform }
func fdatasync(int) error                            { return errPlatform }
func openUring() (backend, error)                    { return nil, errPlatform }
func openEpoll() (backend, error)                    { return nil, errPlatform }
func openPoll() (backend, error)                     { return nil, errPlatform }
func openUringPoll() (backend, error)                { return nil, errPlatform }
func setBatchWait(backend, int, time.Duration) error { return errPlatform }
func newRingReqs(*Loop, *requests) reqDriver         { return nil }

var _ = unix.EBADF // the shared files' errors wrap unix errnos here too
