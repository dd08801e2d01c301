//go:build linux

package uring

import (
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestTimeoutByCount: a TIMEOUT with count 2 completes with Res 0 once two other CQEs are posted.
func TestTimeoutByCount(t *testing.T) {
	r := newTestRing(t)
	ts := NewTimespec(10 * time.Second)
	prep(t, r, 100, func(s *SQE) { s.PrepTimeout(&ts, 2, 0) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	prep(t, r, 1, func(s *SQE) { s.PrepNop() })
	prep(t, r, 2, func(s *SQE) { s.PrepNop() })
	start := time.Now()
	m := byUserData(collect(t, r, 3))
	if c, ok := m[100]; !ok || c.Res != 0 {
		t.Errorf("timeout CQE %+v (present %v), want Res 0", c, ok)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("count timeout took %v", el)
	}
}

// TestTimeoutAbsolute: a TIMEOUT with TimeoutAbs on CLOCK_MONOTONIC fires with -ETIME at that time.
func TestTimeoutAbsolute(t *testing.T) {
	r := newTestRing(t)
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		t.Fatal(err)
	}
	ts := NewTimespec(time.Duration(now.Nano()) + 50*time.Millisecond)
	start := time.Now()
	prep(t, r, 1, func(s *SQE) { s.PrepTimeout(&ts, 0, TimeoutAbs) })
	c := collect(t, r, 1)[0]
	el := time.Since(start)
	if c.Res != errnoRes(unix.ETIME) {
		t.Errorf("Res = %d, want -ETIME", c.Res)
	}
	if el < 40*time.Millisecond || el > time.Second {
		t.Errorf("fired after %v, want ~50ms", el)
	}
}

// TestTimeoutRemove: TIMEOUT_REMOVE ends a pending timeout with -ECANCELED and itself gets 0.
func TestTimeoutRemove(t *testing.T) {
	r := newTestRing(t)
	ts := NewTimespec(10 * time.Second)
	prep(t, r, 1, func(s *SQE) { s.PrepTimeout(&ts, 0, 0) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	prep(t, r, 2, func(s *SQE) { s.PrepTimeoutRemove(1, 0) })
	m := byUserData(collect(t, r, 2))
	if m[1].Res != errnoRes(unix.ECANCELED) || m[2].Res != 0 {
		t.Errorf("results %+v, want 1: -ECANCELED, 2: 0", m)
	}
}

// TestTimeoutUpdate: TIMEOUT_REMOVE with TimeoutUpdate shortens a 10 s timeout to 20 ms.
func TestTimeoutUpdate(t *testing.T) {
	testutil.SkipUnlessKernel(t, 5, 11, "IORING_TIMEOUT_UPDATE")
	r := newTestRing(t)
	ts := NewTimespec(10 * time.Second)
	prep(t, r, 1, func(s *SQE) { s.PrepTimeout(&ts, 0, 0) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	short := NewTimespec(20 * time.Millisecond)
	start := time.Now()
	prep(t, r, 2, func(s *SQE) { s.PrepTimeoutUpdate(&short, 1, 0) })
	m := byUserData(collect(t, r, 2))
	if m[1].Res != errnoRes(unix.ETIME) || m[2].Res != 0 {
		t.Errorf("results %+v, want 1: -ETIME, 2: 0", m)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("updated timeout fired after %v, want ~20ms", el)
	}
}

// TestLinkTimeoutCancelsLinkedPoll: a poll linked to a 30 ms LINK_TIMEOUT is cancelled; the timeout gets -ETIME.
func TestLinkTimeoutCancelsLinkedPoll(t *testing.T) {
	r := newTestRing(t)
	rfd, _ := newPipe(t)
	ts := NewTimespec(30 * time.Millisecond)
	prep(t, r, 1, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) }).SetFlags(SQEIOLink)
	prep(t, r, 2, func(s *SQE) { s.PrepLinkTimeout(&ts, 0) })
	m := byUserData(collect(t, r, 2))
	if m[1].Res != errnoRes(unix.ECANCELED) || m[2].Res != errnoRes(unix.ETIME) {
		t.Errorf("results %+v, want 1: -ECANCELED, 2: -ETIME", m)
	}
}

// TestTimeoutMultishot: a multishot TIMEOUT with count 3 fires 3 times, MORE on all but the last.
func TestTimeoutMultishot(t *testing.T) {
	testutil.SkipUnlessKernel(t, 6, 4, "IORING_TIMEOUT_MULTISHOT")
	r := newTestRing(t)
	ts := NewTimespec(10 * time.Millisecond)
	prep(t, r, 1, func(s *SQE) { s.PrepTimeout(&ts, 3, TimeoutMultishot) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	first := collect(t, r, 1)[0]
	cqes := append([]CQE{first}, collect(t, r, 2)...)
	for i, c := range cqes {
		if c.UserData != 1 || c.Res != errnoRes(unix.ETIME) || c.More() != (i < 2) {
			t.Errorf("shot %d: %+v, want -ETIME, MORE %v", i, c, i < 2)
		}
	}
}
