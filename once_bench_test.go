//go:build linux

package ringev

// A benchmark of the loop's own cost per Once, with a backend that makes no syscall.

import (
	"testing"

	"golang.org/x/sys/unix"
)

// readyBackend is a backend whose wait always reports the same fds ready, without a syscall: it
// isolates the loop's own cost per Once.
type readyBackend struct{ ready []readyFd }

func (f *readyBackend) setInterest(int32, uint32, uint32, uint32) error { return nil }
func (f *readyBackend) wait(_ int64, buf []readyFd) ([]readyFd, error) {
	return append(buf, f.ready...), nil
}
func (f *readyBackend) stillWatched(int32, uint32, uint32) bool { return true }
func (f *readyBackend) close() error                            { return nil }

// BenchmarkOnceOverhead is the loop's own cost per Once (dispatch order, readiness cache,
// fairness, handler call) with a backend that makes no syscall: fd_speed1's two ready fds.
func BenchmarkOnceOverhead(b *testing.B) {
	l, err := New(WithBackend("poll"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	l.AddFd(p[0], Read, func(*FdEvent, Flags) {})
	l.AddFd(p[1], Write, func(*FdEvent, Flags) {})
	real := l.be
	defer func() { l.be = real }()
	l.be = &readyBackend{ready: []readyFd{{Fd: int32(p[0]), Events: unix.POLLIN}, {Fd: int32(p[1]), Events: unix.POLLOUT}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Once(); err != nil {
			b.Fatal(err)
		}
	}
}
