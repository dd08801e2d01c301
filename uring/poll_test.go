//go:build linux

package uring

import (
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestPollOnManyFds: 64 polls on 64 pipes; exactly the written half complete, with POLLIN.
func TestPollOnManyFds(t *testing.T) {
	r := newTestRing(t)
	const n = 64
	var w [n]int
	for i := 0; i < n; i++ {
		var rfd int
		rfd, w[i] = newPipe(t)
		prep(t, r, uint64(i), func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
	}
	if got, err := r.Submit(); got != n || err != nil {
		t.Fatalf("Submit = %d, %v; want %d", got, err, n)
	}
	for i := 0; i < n; i += 2 {
		if _, err := unix.Write(w[i], []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range collect(t, r, n/2) {
		if c.UserData%2 != 0 || c.Res&unix.POLLIN == 0 {
			t.Errorf("CQE %+v: want an even user_data with POLLIN", c)
		}
	}
	expectNoCQE(t, r, 20*time.Millisecond)
	prep(t, r, 1000, func(s *SQE) { s.PrepCancel(0, AsyncCancelAny|AsyncCancelAll) })
	m := byUserData(collect(t, r, n/2+1))
	if m[1000].Res != n/2 {
		t.Errorf("cancel-any-all Res = %d, want %d", m[1000].Res, n/2)
	}
}

// TestPollMultishotAndItsUpdate: a multishot poll posts one CQE per edge with
// CQEFMore, and POLL_REMOVE with update flags changes its user_data in place.
func TestPollMultishotAndItsUpdate(t *testing.T) {
	r := newTestRing(t)
	rfd, wfd := newPipe(t)
	prep(t, r, 1, func(s *SQE) { s.PrepPollMultishot(rfd, unix.POLLIN) })
	buf := make([]byte, 16)
	for i := 0; i < 2; i++ {
		if _, err := unix.Write(wfd, []byte("x")); err != nil {
			t.Fatal(err)
		}
		c := collect(t, r, 1)[0]
		if c.UserData != 1 || c.Res&unix.POLLIN == 0 || !c.More() {
			t.Fatalf("edge %d: CQE %+v, want user_data 1, POLLIN, MORE", i, c)
		}
		unix.Read(rfd, buf)
	}
	prep(t, r, 2, func(s *SQE) {
		s.PrepPollUpdate(1, 11, unix.POLLIN, PollUpdateEvents|PollUpdateUserData|PollAddMulti)
	})
	if c := collect(t, r, 1)[0]; c.UserData != 2 || c.Res != 0 {
		t.Fatalf("update CQE %+v, want user_data 2, Res 0", c)
	}
	if _, err := unix.Write(wfd, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if c := collect(t, r, 1)[0]; c.UserData != 11 || c.Res&unix.POLLIN == 0 || !c.More() {
		t.Fatalf("after update: CQE %+v, want user_data 11, POLLIN, MORE", c)
	}
	prep(t, r, 3, func(s *SQE) { s.PrepPollRemove(11) })
	m := byUserData(collect(t, r, 2))
	if m[11].Res != errnoRes(unix.ECANCELED) || m[11].More() || m[3].Res != 0 {
		t.Errorf("remove: %+v, want 11: -ECANCELED without MORE, 3: 0", m)
	}
}

// TestPollCancelByUserData: ASYNC_CANCEL by user_data ends a pending poll with -ECANCELED.
func TestPollCancelByUserData(t *testing.T) {
	r := newTestRing(t)
	rfd, _ := newPipe(t)
	prep(t, r, 1, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
	prep(t, r, 2, func(s *SQE) { s.PrepCancel(1, 0) })
	m := byUserData(collect(t, r, 2))
	if m[1].Res != errnoRes(unix.ECANCELED) || m[2].Res != 0 {
		t.Errorf("results %+v, want 1: -ECANCELED, 2: 0", m)
	}
	prep(t, r, 3, func(s *SQE) { s.PrepCancel(1, 0) })
	if c := collect(t, r, 1)[0]; c.Res != errnoRes(unix.ENOENT) {
		t.Errorf("second cancel Res %d, want -ENOENT", c.Res)
	}
}

// TestCancelAllByFdReturnsCount: ASYNC_CANCEL_FD|ALL cancels the 3 polls on one fd and returns 3.
func TestCancelAllByFdReturnsCount(t *testing.T) {
	testutil.SkipUnlessKernel(t, 5, 19, "IORING_ASYNC_CANCEL_FD")
	r := newTestRing(t)
	rfd, _ := newPipe(t)
	other, _ := newPipe(t)
	for i := uint64(1); i <= 3; i++ {
		prep(t, r, i, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
	}
	prep(t, r, 4, func(s *SQE) { s.PrepPollAdd(other, unix.POLLIN) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	prep(t, r, 9, func(s *SQE) { s.PrepCancelFd(rfd, AsyncCancelAll) })
	m := byUserData(collect(t, r, 4))
	if m[9].Res != 3 {
		t.Errorf("cancel Res = %d, want 3", m[9].Res)
	}
	for i := uint64(1); i <= 3; i++ {
		if m[i].Res != errnoRes(unix.ECANCELED) {
			t.Errorf("poll %d Res = %d, want -ECANCELED", i, m[i].Res)
		}
	}
	if _, ok := m[4]; ok {
		t.Errorf("poll on another fd completed: %+v", m[4])
	}
}
