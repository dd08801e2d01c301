package ringev_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// speedLoop is the fd_speedN shape of tevent's benchmark on one loop: one pipe, a Read handler
// reading one byte and a Write handler writing one byte, plus extra idle pairs. The handlers do
// their I/O with the loop's methods (Loop.ReadNonblocking, Loop.WriteNonblocking), or with the
// package functions (read(2) and write(2) of their own) when syscalls is set.
type speedLoop struct {
	loop   *ringev.Loop
	p      [2]int
	buf    [1]byte
	events int
}

func newSpeedLoop(tb testing.TB, backend string, extra int, syscalls bool) *speedLoop {
	tb.Helper()
	l, err := ringev.New(ringev.WithBackend(backend))
	requireNew(tb, backend, err)
	s := &speedLoop{loop: l}
	if err := unix.Pipe2(s.p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close(); unix.Close(s.p[0]); unix.Close(s.p[1]) })
	add := func(fd int, f ringev.Flags, h ringev.FdHandler) {
		if _, err := l.AddFd(fd, f, h); err != nil {
			tb.Fatal(err)
		}
	}
	read, write := l.ReadNonblocking, l.WriteNonblocking
	if syscalls {
		read, write = ringev.ReadNonblocking, ringev.WriteNonblocking
	}
	add(s.p[0], ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
		if n, _ := read(s.p[0], s.buf[:]); n == 1 {
			s.events++
		}
	})
	add(s.p[1], ringev.Write, func(*ringev.FdEvent, ringev.Flags) { write(s.p[1], s.buf[:]) })
	for i := 0; i < extra; i++ {
		add(s.p[0], ringev.Write, func(*ringev.FdEvent, ringev.Flags) { tb.Error("idle handler called") })
		add(s.p[1], ringev.Read, func(*ringev.FdEvent, ringev.Flags) { tb.Error("idle handler called") })
	}
	return s
}

// run turns the loop until n more read events happened.
func (s *speedLoop) run(tb testing.TB, n int) {
	target := s.events + n
	for s.events < target {
		if err := s.loop.Once(); err != nil {
			tb.Fatal(err)
		}
	}
}

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
					s := newSpeedLoop(b, be, extra, syscalls)
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
	defer ringev.SetUringFallback(true)()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := newSpeedLoop(b, "uring", 0, true)
	s.run(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	s.run(b, b.N)
}

// TestSteadyStateDoesNotAllocate: once warmed up, an fd event round (a read and a write handler
// making their own read(2) and write(2)) allocates nothing on any backend. (With the loop's
// methods: TestLoopIOSteadyStateDoesNotAllocate.)
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	for _, be := range ringev.Backends() {
		t.Run(be, func(t *testing.T) {
			s := newSpeedLoop(t, be, 2, true)
			s.run(t, 1000)
			if a := testing.AllocsPerRun(1000, func() { s.run(t, 1) }); a != 0 {
				t.Errorf("%s: %.2f allocations per read event, want 0", be, a)
			}
		})
	}
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
				l, err := ringev.New(ringev.WithBackend(be))
				requireNew(b, be, err)
				defer l.Close()
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
