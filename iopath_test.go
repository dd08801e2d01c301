//go:build linux

package ringev_test

// Tests of WithIOPath, Loop.IOPath and IOPathReason, and of the loop measuring and switching the
// path of its handlers' I/O (ride.go) while it runs. Which path the loop chooses here depends on
// this machine's syscall costs, so no test asserts that choice: ride_test.go tests the decision
// with given costs. These use the fd_speed harness of helpers_test.go (newSpeed, helpers_test.go).

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringev/ringev"
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

// TestIOPathAutoMeasuresBothPathsAndSaysWhat: by default (auto) on uring the loop starts on the
// calibration's path and says so ("auto: <path>: not measured while running yet; at start ... ns
// ..."); once handlers ran their I/O through the loop for a few windows (64 runs each here), it
// has measured both paths and the reason gives the costs of the last probe. The reason's path is
// IOPath's. (Which path wins depends on this machine: not asserted here.)
func TestIOPathAutoMeasuresBothPathsAndSaysWhat(t *testing.T) {
	requireRide(t)
	s := newSpeed(t, "uring", true, 0, ringev.WithIOPath(ringev.IOPathAuto))
	r := s.l.IOPathReason()
	if !strings.HasPrefix(r, "auto: "+s.l.IOPath()+": not measured while running yet; at start ") || !strings.Contains(r, " ns ") {
		t.Errorf("before running: IOPath %q, IOPathReason %q", s.l.IOPath(), r)
	}
	ringev.SetRideWindow(s.l, 64, false)
	s.run(t, 3000)
	s.check(t)
	ring, sys := ringev.RideWindows(s.l)
	if ring == 0 || sys == 0 {
		t.Fatalf("after 3000 events: %d windows through the ring, %d with read(2)/write(2); want both measured", ring, sys)
	}
	r = s.l.IOPathReason()
	if !strings.HasPrefix(r, "auto: "+s.l.IOPath()+": ") || !strings.Contains(r, "ns per fd handler run through the ring") ||
		strings.Contains(r, "not measured") || !strings.Contains(r, "probes") {
		t.Errorf("after 3000 events: IOPath %q, IOPathReason %q", s.l.IOPath(), r)
	}
}

// TestRideSwitchingEveryWindowKeepsEveryEvent: a loop whose handlers' I/O switches path at every
// window end (every 7 fd handler runs), in every dispatch mode, delivers fd_speed2's 3000 read
// events: every handler call moves exactly its byte, in order, with the right flags, no idle
// handler runs, and what was written and not read is in the pipe.
func TestRideSwitchingEveryWindowKeepsEveryEvent(t *testing.T) {
	requireRide(t)
	for _, m := range []mode{modeDefault, modeAll} {
		t.Run(m.name, func(t *testing.T) {
			s := newSpeed(t, "uring", true, 1, append([]ringev.Option{ringev.WithIOPath(ringev.IOPathAuto)}, m.opts()...)...)
			ringev.SetRideWindow(s.l, 7, true)
			s.run(t, 3000)
			s.check(t)
			if ring, sys := ringev.RideWindows(s.l); ring < 100 || sys < 100 {
				t.Fatalf("%d windows through the ring, %d with read(2)/write(2); want at least 100 each", ring, sys)
			}
		})
	}
}

// TestRideMeasuringDoesNotAllocate: measuring windows, and switching path at each window end,
// allocate nothing: a read event of fd_speed1 with windows of 5 runs allocates 0.
func TestRideMeasuringDoesNotAllocate(t *testing.T) {
	requireRide(t)
	s := newSpeed(t, "uring", true, 0, ringev.WithIOPath(ringev.IOPathAuto))
	ringev.SetRideWindow(s.l, 5, true)
	s.run(t, 1000)
	if a := testing.AllocsPerRun(1000, func() { s.run(t, 1) }); a != 0 {
		t.Fatalf("%.2f allocations per read event, want 0", a)
	}
	s.check(t)
	if ring, sys := ringev.RideWindows(s.l); ring == 0 || sys == 0 {
		t.Fatalf("%d windows through the ring, %d with read(2)/write(2); want both", ring, sys)
	}
}
