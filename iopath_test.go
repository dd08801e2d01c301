//go:build linux

package ringev_test

// Tests of WithIOPath, Loop.IOPath and IOPathReason (ride.go): the path of the handlers' I/O
// through the loop's methods. These use the fd_speed harness of helpers_test.go (newSpeed).

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
)

// TestIOPathUnknownNameIsAnError: New with a WithIOPath name other than auto, ring and syscall
// fails with an error wrapping ErrUnknownIOPath that names the bad name and the known ones.
func TestIOPathUnknownNameIsAnError(t *testing.T) {
	l, err := ringev.New(ringev.WithIOPath("fast"))
	if err == nil {
		l.Close()
		t.Fatal("New(WithIOPath(\"fast\")) succeeded")
	}
	if !errors.Is(err, ringev.ErrUnknownIOPath) {
		t.Errorf("error %v does not wrap ErrUnknownIOPath", err)
	}
	for _, want := range []string{`"fast"`, "auto", "ring", "syscall"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestIOPathRingForcedRidesAndSaysSo: with WithIOPath("ring") on uring the loop says so
// (IOPath "ring", IOPathReason `WithIOPath("ring")`) and fd_speed1's I/O through the loop spares
// the waits: fewer than 100 for 1000 read events.
func TestIOPathRingForcedRidesAndSaysSo(t *testing.T) {
	requireRide(t)
	s := newSpeed(t, "uring", true, 0, ringev.WithIOPath(ringev.IOPathRing))
	if p, r := s.l.IOPath(), s.l.IOPathReason(); p != ringev.IOPathRing || r != `WithIOPath("ring")` {
		t.Errorf("IOPath %q, IOPathReason %q; want ring, WithIOPath(\"ring\")", p, r)
	}
	s.run(t, 100)
	w0 := ringev.Waits(s.l)
	s.run(t, 1000)
	s.check(t)
	if waits := ringev.Waits(s.l) - w0; waits >= 100 {
		t.Fatalf("1000 read events through the ring took %d waits, want fewer than 100", waits)
	}
}

// TestIOPathOnAKernelWithoutEpollWaitSaysSoFromNew: on a kernel without IORING_OP_EPOLL_WAIT
// (before Linux 6.15, played by SetProbeHides), a uring loop with WithIOPath("ring") says from
// New on, before its first wait, that handler I/O is read(2)/write(2) and why.
func TestIOPathOnAKernelWithoutEpollWaitSaysSoFromNew(t *testing.T) {
	restore := ringev.SetProbeHides(uring.OpEpollWait)
	l := newLoop(t, "uring", ringev.WithIOPath(ringev.IOPathRing))
	restore()
	if p, r := l.IOPath(), l.IOPathReason(); p != ringev.IOPathSyscall || !strings.Contains(r, "IORING_OP_EPOLL_WAIT (Linux 6.15)") {
		t.Errorf("IOPath %q, IOPathReason %q; want syscall, naming IORING_OP_EPOLL_WAIT (Linux 6.15)", p, r)
	}
}

// TestIOPathSyscallForcedNeverRides: with WithIOPath("syscall") on uring the loop's methods are
// read(2)/write(2): every fd_speed1 read event takes about one wait (at least 500 for 1000), and
// the loop says why.
func TestIOPathSyscallForcedNeverRides(t *testing.T) {
	s := newSpeed(t, "uring", true, 0, ringev.WithIOPath(ringev.IOPathSyscall))
	if p, r := s.l.IOPath(), s.l.IOPathReason(); p != ringev.IOPathSyscall || r != `WithIOPath("syscall")` {
		t.Errorf("IOPath %q, IOPathReason %q; want syscall, WithIOPath(\"syscall\")", p, r)
	}
	s.run(t, 100)
	w0 := ringev.Waits(s.l)
	s.run(t, 1000)
	s.check(t)
	if waits := ringev.Waits(s.l) - w0; waits < 500 {
		t.Fatalf("1000 read events took %d waits, want about one each (at least 500)", waits)
	}
}

// TestIOPathWithoutARingSaysWhy: on the backends without a ring (epoll, poll, uring-poll) the
// path is "syscall" whatever WithIOPath asked for, and IOPathReason names the backend.
func TestIOPathWithoutARingSaysWhy(t *testing.T) {
	for _, backend := range []string{"epoll", "poll", "uring-poll"} {
		for _, path := range []string{ringev.IOPathAuto, ringev.IOPathRing, ringev.IOPathSyscall} {
			t.Run(backend+"/"+path, func(t *testing.T) {
				l := newLoop(t, backend, ringev.WithIOPath(path))
				want := "the " + backend + " backend has no ring"
				if p, r := l.IOPath(), l.IOPathReason(); p != ringev.IOPathSyscall || !strings.HasPrefix(r, want) {
					t.Errorf("IOPath %q, IOPathReason %q; want syscall, %q...", p, r, want)
				}
			})
		}
	}
}

// TestIOPathFreshReadinessSaysWhy: with WithFreshReadiness no look rides on uring, whatever
// WithIOPath asked for: the path is "syscall" and the reason names the option.
func TestIOPathFreshReadinessSaysWhy(t *testing.T) {
	for _, path := range []string{ringev.IOPathAuto, ringev.IOPathRing} {
		l := newLoop(t, "uring", ringev.WithFreshReadiness(), ringev.WithIOPath(path))
		if p, r := l.IOPath(), l.IOPathReason(); p != ringev.IOPathSyscall || !strings.HasPrefix(r, "WithFreshReadiness") {
			t.Errorf("%s: IOPath %q, IOPathReason %q; want syscall, WithFreshReadiness...", path, p, r)
		}
	}
}

// TestIOPathUringFallbackSaysWhy: on the uring backend's fallback for kernels without
// IORING_OP_EPOLL_WAIT no look can ride: the path is "syscall" and the reason names the op.
func TestIOPathUringFallbackSaysWhy(t *testing.T) {
	l := newLoop(t, uringFallback)
	if p, r := l.IOPath(), l.IOPathReason(); p != ringev.IOPathSyscall || !strings.Contains(r, "IORING_OP_EPOLL_WAIT") {
		t.Errorf("IOPath %q, IOPathReason %q; want syscall and a reason naming IORING_OP_EPOLL_WAIT", p, r)
	}
}

// TestIOPathAfterCloseSaysClosed: after Close the loop's methods are read(2)/write(2), and the
// loop says so.
func TestIOPathAfterCloseSaysClosed(t *testing.T) {
	l, err := ringev.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if p, r := l.IOPath(), l.IOPathReason(); p != ringev.IOPathSyscall || !strings.Contains(r, "closed") {
		t.Errorf("after Close: IOPath %q, IOPathReason %q; want syscall, ...closed...", p, r)
	}
}

// TestIOPathDefaultIsSyscallAndSaysSo: without WithIOPath, and with the deprecated
// WithIOPath("auto"), the uring loop's methods are read(2)/write(2) from the start: IOPath is
// "syscall", IOPathReason says why, and every fd_speed1 read event takes about one wait (at
// least 500 for 1000), as with WithIOPath("syscall").
func TestIOPathDefaultIsSyscallAndSaysSo(t *testing.T) {
	requireRide(t)
	for _, tc := range []struct {
		name   string
		opts   []ringev.Option
		reason string
	}{
		{"Default", nil, "the default: handler I/O is read(2)/write(2)"},
		{"Auto", []ringev.Option{ringev.WithIOPath(ringev.IOPathAuto)}, `WithIOPath("auto"), deprecated: the default`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w := testutil.Pipe(t)
			l, err := ringev.New(append([]ringev.Option{ringev.WithBackend("uring")}, tc.opts...)...) // not newLoop: no WithIOPath
			requireNew(t, "uring", err)
			t.Cleanup(func() { l.Close() })
			s := &speed{l: l, r: r, w: w, viaLoop: true}
			addFd(t, l, r, ringev.Read, s.onRead)
			addFd(t, l, w, ringev.Write, s.onWrite)
			if p, r := l.IOPath(), l.IOPathReason(); p != ringev.IOPathSyscall || !strings.HasPrefix(r, tc.reason) {
				t.Errorf("IOPath %q, IOPathReason %q; want syscall, %q...", p, r, tc.reason)
			}
			s.run(t, 100)
			w0 := ringev.Waits(l)
			s.run(t, 1000)
			s.check(t)
			if waits := ringev.Waits(l) - w0; waits < 500 {
				t.Fatalf("1000 read events took %d waits, want about one each (at least 500): the I/O rode the ring", waits)
			}
		})
	}
}

// TestIOPathSyscallOnAKernelWithoutEpollWaitSaysTheOption: WithIOPath("syscall") on a kernel
// without IORING_OP_EPOLL_WAIT (SetProbeHides) gives the option as IOPathReason, as on any
// kernel: the missing opcode changes nothing that was asked.
func TestIOPathSyscallOnAKernelWithoutEpollWaitSaysTheOption(t *testing.T) {
	restore := ringev.SetProbeHides(uring.OpEpollWait)
	l := newLoop(t, "uring", ringev.WithIOPath(ringev.IOPathSyscall))
	restore()
	if p, r := l.IOPath(), l.IOPathReason(); p != ringev.IOPathSyscall || r != `WithIOPath("syscall")` {
		t.Errorf("IOPath %q, IOPathReason %q; want syscall, WithIOPath(\"syscall\")", p, r)
	}
}
