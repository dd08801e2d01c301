//go:build linux

package ringev

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
	"golang.org/x/sys/unix"
)

// pollBackend is the poll(2) backend (tevent's "poll"): an array of pollfds handed to ppoll(2)
// on every wait, with a nanosecond timeout.
type pollBackend struct {
	fds []unix.PollFd // watched fds
	idx []int32       // fd number -> index in fds + 1 (0: not watched)
}

func openPoll() (backend, error) { return &pollBackend{}, nil }

func (b *pollBackend) setInterest(fd int32, _, old, new uint32) error {
	if int(fd) >= len(b.idx) {
		n := 2*len(b.idx) + int(fd) + 16
		idx := make([]int32, n)
		copy(idx, b.idx)
		b.idx = idx
	}
	i := b.idx[fd] - 1
	switch {
	case new == 0 && i >= 0:
		last := len(b.fds) - 1
		b.fds[i] = b.fds[last]
		b.idx[b.fds[i].Fd] = i + 1
		b.fds = b.fds[:last]
		b.idx[fd] = 0
	case new != 0 && i >= 0:
		b.fds[i].Events = int16(new)
	case new != 0:
		b.fds = append(b.fds, unix.PollFd{Fd: fd, Events: int16(new)})
		b.idx[fd] = int32(len(b.fds))
	}
	return nil
}

func (b *pollBackend) wait(timeout int64, buf []readyFd) ([]readyFd, error) {
	var ts unix.Timespec
	var n int
	var err error
	if timeout == 0 {
		// A look without blocking (the core's busy loop) cannot block, so it skips the
		// runtime's syscall bookkeeping (see internal/rawsys).
		r, e := rawsys.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(unsafe.SliceData(b.fds))), uintptr(len(b.fds)),
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		n = int(r)
		if e != 0 {
			err = e
		}
	} else {
		var tsp *unix.Timespec
		if timeout > 0 {
			ts = unix.NsecToTimespec(timeout)
			tsp = &ts
		}
		n, err = unix.Ppoll(b.fds, tsp, nil)
	}
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return buf, nil
		}
		return buf, fmt.Errorf("ringev: poll backend: ppoll: %w", err)
	}
	for i := range b.fds {
		if n == 0 {
			break
		}
		if r := b.fds[i].Revents; r != 0 {
			buf = append(buf, readyFd{Fd: b.fds[i].Fd, Events: uint32(uint16(r))})
			n--
		}
	}
	return buf, nil
}

func (b *pollBackend) stillWatched(int32, uint32, uint32) bool { return true }

func (b *pollBackend) close() error { b.fds = nil; return nil }
