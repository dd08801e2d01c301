//go:build linux

package ringev_test

// Benchmarks of the loop: tevent's fd_speed shapes, an echo, requests, and the owner's cost of
// the calls that are safe from any goroutine (timers, immediates).

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// BenchmarkFdSpeed measures tevent's fd_speed1/2/3 shapes on every backend: one op is one read
// event (two handler calls). The handlers' I/O goes through the loop's methods; in the
// sub-benchmarks ending in /syscall they make their own read(2) and write(2). Compare with
// benchstat.
func BenchmarkFdSpeed(b *testing.B) {
	for _, be := range ringev.Backends() {
		for extra := 0; extra < 3; extra++ {
			for _, syscalls := range []bool{false, true} {
				name := fmt.Sprintf("%s/fd_speed%d", be, extra+1)
				if syscalls {
					name += "/syscall"
				}
				b.Run(name, func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					s := newSpeed(b, be, !syscalls, extra)
					s.run(b, 1000)
					b.ReportAllocs()
					b.ResetTimer()
					s.run(b, b.N)
				})
			}
		}
	}
}

// BenchmarkUringFallback measures fd_speed1 on the uring backend's fallback for kernels without
// IORING_OP_EPOLL_WAIT (a one-shot POLL_ADD on the epoll fd, then epoll_wait).
func BenchmarkUringFallback(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := newSpeed(b, uringFallback, false, 0)
	s.run(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	s.run(b, b.N)
}

// BenchmarkEcho measures a request/response echo over a socketpair: a client goroutine sends
// 64 bytes and waits (blocking) for them to come back; the loop's Read handler reads until
// EAGAIN and writes back what it read. One op is one round trip. The handler's I/O goes through
// the loop's methods; in the sub-benchmarks ending in /syscall it is the package functions.
func BenchmarkEcho(b *testing.B) {
	for _, be := range ringev.Backends() {
		for _, syscalls := range []bool{false, true} {
			name := be
			if syscalls {
				name += "/syscall"
			}
			b.Run(name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				l := newLoop(b, be)
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer unix.Close(fds[0])
				defer unix.Close(fds[1])
				// If the loop side fails, the client's blocking read must end: shut the socket.
				defer unix.Shutdown(fds[1], unix.SHUT_RDWR)
				if err := unix.SetNonblock(fds[0], true); err != nil {
					b.Fatal(err)
				}
				read, write := l.ReadNonblocking, l.WriteNonblocking
				if syscalls {
					read, write = ringev.ReadNonblocking, ringev.WriteNonblocking
				}
				buf := make([]byte, 4096)
				if _, err := l.AddFd(fds[0], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
					for {
						n, err := read(fds[0], buf)
						if n <= 0 || err != nil {
							return
						}
						write(fds[0], buf[:n])
					}
				}); err != nil {
					b.Fatal(err)
				}
				var clientErr error
				finished := false
				go func() {
					msg := make([]byte, 64)
					var err error
					defer func() { l.Post(func() { clientErr, finished = err, true }) }()
					for i := 0; i < b.N; i++ {
						if _, err = unix.Write(fds[1], msg); err != nil {
							return
						}
						for got := 0; got < len(msg); {
							var n int
							if n, err = unix.Read(fds[1], msg); err != nil {
								return
							}
							got += n
						}
					}
				}()
				b.ResetTimer()
				for !finished {
					if err := l.Once(); err != nil {
						b.Fatal(err)
					}
				}
				if clientErr != nil {
					b.Fatal(clientErr)
				}
			})
		}
	}
}

// BenchmarkRequestSendRecv: one send and one recv request per op over a socketpair, made,
// completed and called back, on every backend (ns/op, allocs/op).
func BenchmarkRequestSendRecv(b *testing.B) {
	for _, backend := range ringev.Backends() {
		b.Run(backend, func(b *testing.B) {
			sa, sb := testutil.Socketpair(b)
			l := newLoop(b, backend)
			c := &echoConn{l: l, a: sa, b: sb, buf: make([]byte, 64), msg: []byte("ping")}
			c.cb = c.onDone
			defer guard(l, &c.err)()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.round()
			}
			if c.err != nil {
				b.Fatal(c.err)
			}
		})
	}
}

// BenchmarkImmediateScheduleAndRun: one Schedule of a made immediate and the Once that runs it,
// on the owner's goroutine (Schedule is safe from any goroutine: this is the owner's cost).
func BenchmarkImmediateScheduleAndRun(b *testing.B) {
	l := newLoop(b, "poll")
	keepAlive(b, l)
	b.ReportAllocs()
	runs := 0
	im := l.AddImmediate(func() { runs++ })
	if err := l.Once(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		im.Schedule()
		if err := l.Once(); err != nil {
			b.Fatal(err)
		}
	}
	if runs != b.N+1 {
		b.Fatalf("%d runs, want %d", runs, b.N+1)
	}
}

// BenchmarkTimerAddAndRun: AddTimer(0) and the Once that runs it, on the owner's goroutine.
func BenchmarkTimerAddAndRun(b *testing.B) {
	l := newLoop(b, "poll")
	keepAlive(b, l)
	b.ReportAllocs()
	runs := 0
	h := func(*ringev.Timer) { runs++ }
	for range b.N {
		l.AddTimer(0, h)
		if err := l.Once(); err != nil {
			b.Fatal(err)
		}
	}
	if runs != b.N {
		b.Fatalf("%d runs, want %d", runs, b.N)
	}
}

// BenchmarkTimerAddAndStop: AddTimer and Stop before it is due, on the owner's goroutine.
func BenchmarkTimerAddAndStop(b *testing.B) {
	l := newLoop(b, "poll")
	keepAlive(b, l)
	b.ReportAllocs()
	h := func(*ringev.Timer) {}
	for range b.N {
		if !l.AddTimer(time.Minute, h).Stop() {
			b.Fatal("Stop returned false")
		}
	}
}
