//go:build linux

package ringev_test

// Tests of multishot requests and buffer groups (RecvMultishot, NewBufferGroup): group IDs,
// incremental consumption, SockNonempty, and a multishot recv on a pipe.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRequestBufferGroupIDsAreNotReusedWhileInUse: a loop makes and closes more buffer groups
// than a group ID (16 bits) counts while one group stays: every NewBufferGroup succeeds (an ID
// still in use is not given again).
func TestRequestBufferGroupIDsAreNotReusedWhileInUse(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		keep, err := l.NewBufferGroup(1, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer keep.Close()
		for i := range 1<<16 + 2 {
			g, err := l.NewBufferGroup(1, 64)
			if err != nil {
				t.Fatalf("NewBufferGroup #%d with one group kept: %v", i+2, err)
			}
			if err := g.Close(); err != nil {
				t.Fatalf("Close #%d: %v", i+2, err)
			}
		}
	})
}

// TestRequestBufferGroupIncrementalConsumption: on uring with IOU_PBUF_RING_INC (6.12), small
// receives share one group buffer, one after the other, each completion's view holding its
// own bytes; the buffer goes back to the kernel only when it is full and every view released.
func TestRequestBufferGroupIncrementalConsumption(t *testing.T) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	g, err := l.NewBufferGroup(2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Incremental() {
		testutil.SkipUnlessKernel(t, 6, 12, "IOU_PBUF_RING_INC (incremental buffer consumption)")
		t.Fatal("the kernel is 6.12 or later, yet the group is not incremental")
	}
	type got struct {
		id   int
		data string
	}
	var seen []got
	var held []int
	cb := func(c *ringev.Completion) {
		if c.Err != nil || !c.More {
			t.Errorf("completion %+v", c)
			return
		}
		seen = append(seen, got{c.BufferID(), string(c.Buf)})
		held = append(held, c.BufferID())
	}
	must(t)(l.RecvMultishot(a, g, 0, cb, 0))
	for _, m := range []string{"ab", "cd", "ef", "gh", "ij"} { // 8 bytes fill the first buffer
		testutil.Write(t, b, []byte(m))
		n := len(seen)
		until(t, l, func() bool { return len(seen) > n })
	}
	want := []got{{seen[0].id, "ab"}, {seen[0].id, "cd"}, {seen[0].id, "ef"}, {seen[0].id, "gh"}}
	for i, w := range want {
		if seen[i] != w {
			t.Fatalf("completion %d: %+v, want %+v (all %+v)", i, seen[i], w, seen)
		}
	}
	if seen[4].id == seen[0].id || seen[4].data != "ij" {
		t.Fatalf("fifth completion %+v: want the next buffer (the first is full)", seen[4])
	}
	for _, id := range held {
		g.Release(id)
	}
	held = held[:0]
	// Both buffers back or in use: 14 more bytes still arrive whole.
	testutil.Write(t, b, []byte("0123456789abcd"))
	var all string
	until(t, l, func() bool {
		all = ""
		for _, s := range seen[5:] {
			all += s.data
		}
		return len(all) >= 14
	})
	if all != "0123456789abcd" {
		t.Fatalf("received %q after the release", all)
	}
}

// TestRequestRecvMultishotSaysSockNonemptyWhileTheSocketHoldsMore: on uring, a RecvMultishot
// completion that leaves data in the socket (6,000 bytes into buffers of 4,096) has
// SockNonempty set (IORING_CQE_F_SOCK_NONEMPTY); the one that takes the rest has it clear.
func TestRequestRecvMultishotSaysSockNonemptyWhileTheSocketHoldsMore(t *testing.T) {
	requireOp(t, ringev.OpRecvMultishot)
	client, server := testutil.TCPPair(t, 0)
	l := newLoop(t, "uring")
	g, err := l.NewBufferGroup(4, 4096)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		n            int
		sockNonempty bool
	}
	var seen []got
	total := 0
	cb := func(c *ringev.Completion) {
		if c.Err != nil {
			t.Errorf("completion: %v", c.Err)
			return
		}
		seen = append(seen, got{c.N, c.SockNonempty})
		total += c.N
		c.ReleaseBuffer()
	}
	must(t)(l.RecvMultishot(server, g, 0, cb, 0))
	testutil.Write(t, client, make([]byte, 6000))
	untilFor(t, l, deadline, "6,000 bytes received", func() bool { return total >= 6000 })
	if len(seen) < 2 || seen[0] != (got{4096, true}) || seen[len(seen)-1].sockNonempty {
		t.Fatalf("completions %+v: want the first to fill its buffer with SockNonempty set, the last with it clear", seen)
	}
}

// TestRequestRecvMultishotOnPipeEndsWithError: RecvMultishot on a pipe (not a socket) is
// refused at the call or ends with one callback that carries ENOTSOCK, on every backend.
func TestRequestRecvMultishotOnPipeEndsWithError(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		g, err := l.NewBufferGroup(2, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		testutil.Write(t, w, []byte("x"))
		last, runs := 0, 0
		var lastErr error
		h, err := l.RecvMultishot(r, g, 0, func(c *ringev.Completion) {
			runs++
			c.ReleaseBuffer()
			if !c.More {
				last++
				lastErr = c.Err
			}
		}, 0)
		if err != nil {
			return // refused at once: fine
		}
		h.SetTimeout(2 * time.Second)
		untilFor(t, l, deadline, "RecvMultishot on a pipe", func() bool { return last > 0 })
		if !errors.Is(lastErr, unix.ENOTSOCK) {
			t.Errorf("RecvMultishot on a pipe ended with %v after %d callbacks, want ENOTSOCK", lastErr, runs)
		}
	})
}

// TestRequestBufferGroupReleaseOfABufferNoCompletionHoldsIsIgnored: a second Release of a
// completion's buffer, which no completion holds then, changes nothing: a RecvMultishot into a
// group of 2 buffers of 16 bytes whose callback releases each buffer twice gets every one of 40
// one-byte writes, one after the other, more than the buffers hold even when the kernel fills
// them a part at a time (incremental consumption): a release counted below zero would keep a
// buffer from the kernel for good.
func TestRequestBufferGroupReleaseOfABufferNoCompletionHoldsIsIgnored(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		g, err := l.NewBufferGroup(2, 16)
		if err != nil {
			t.Fatal(err)
		}
		var recv []byte
		cb := func(c *ringev.Completion) {
			if c.Err != nil {
				t.Errorf("completion %+v", c)
				return
			}
			recv = append(recv, c.Buf...)
			g.Release(c.BufferID())
			g.Release(c.BufferID())
		}
		must(t)(l.RecvMultishot(a, g, 0, cb, 0))
		var want []byte
		for i := range 40 {
			want = append(want, 'A'+byte(i))
			testutil.Write(t, b, want[i:])
			until(t, l, func() bool { return len(recv) > i || t.Failed() })
		}
		if string(recv) != string(want) {
			t.Fatalf("received %q, want %q", recv, want)
		}
	})
}

// multishotLog records a RecvMultishot's completions: the data each brought (released at
// once unless hold), the ENOBUFS ones, and the last one's error.
type multishotLog struct {
	data    []string
	enobufs int
	ended   bool
	lastErr error
	hold    bool
}

// cb is the RecvMultishot's callback.
func (m *multishotLog) cb(c *ringev.Completion) {
	switch {
	case !c.More:
		m.ended, m.lastErr = true, c.Err
	case errors.Is(c.Err, unix.ENOBUFS):
		m.enobufs++
	case c.Err == nil:
		m.data = append(m.data, string(c.Buf))
		if !m.hold {
			c.ReleaseBuffer()
		}
	}
}

// forgeRecvMore posts in h's loop's ring the CQE of a receive into group buffer 0, more to
// come, for h's record at h's generation (ringev.ForgeRecvMoreCQE), and runs l until it has
// read it; it skips the test on a kernel without IORING_MSG_RING_FLAGS_PASS (Linux 6.3).
func forgeRecvMore(t *testing.T, l *ringev.Loop, h ringev.Request) {
	t.Helper()
	w0 := ringev.RingWakes(l)
	if err := ringev.ForgeRecvMoreCQE(h, 5, 0); errors.Is(err, unix.EINVAL) {
		testutil.SkipUnlessKernel(t, 6, 3, "IORING_MSG_RING_FLAGS_PASS")
		t.Fatal(err)
	} else if err != nil {
		t.Fatal(err)
	}
	untilBounded(t, l, "the forged CQE read", func() bool { return ringev.RingWakes(l) > w0 })
}

// forgedCQESetup is the start of the tests of CQEs forged through MSG_RING (forgeRecvMore): a
// socketpair (a, b) and a uring loop with a group of bufs buffers of 8 bytes.
func forgedCQESetup(t *testing.T, bufs int) (l *ringev.Loop, g *ringev.BufferGroup, a, b int) {
	t.Helper()
	requireOp(t, ringev.OpRecvMultishot)
	requireMsgRing(t)
	a, b = testutil.Socketpair(t)
	l = newLoop(t, "uring")
	g, err := l.NewBufferGroup(bufs, 8)
	if err != nil {
		t.Fatal(err)
	}
	return l, g, a, b
}

// TestRequestRecvMultishotDropsACQEOfItsRecordsEarlierUse: on uring, a RecvMultishot's
// intermediate CQE (data in a group buffer, more to come) that carries an earlier use of the
// record (a cancelled RecvMultishot's, whose record the next RecvMultishot took) runs no
// callback: the new request's only completion is its own last one.
func TestRequestRecvMultishotDropsACQEOfItsRecordsEarlierUse(t *testing.T) {
	l, g, a, _ := forgedCQESetup(t, 2)
	var first, second multishotLog
	old := must(t)(l.RecvMultishot(a, g, 0, first.cb, 0))
	untilWaited(t, l)
	if err := old.Cancel(); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return first.ended })
	cur := must(t)(l.RecvMultishot(a, g, 0, second.cb, 0))
	if !ringev.SameRecord(old, cur) {
		t.Fatal("the second RecvMultishot did not take the cancelled one's record")
	}
	untilWaited(t, l)
	forgeRecvMore(t, l, old)
	if err := cur.Cancel(); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return second.ended })
	if len(second.data) != 0 || !errors.Is(second.lastErr, unix.ECANCELED) {
		t.Fatalf("the second RecvMultishot got data %q, then %v: want none, then ECANCELED", second.data, second.lastErr)
	}
}

// TestRequestRecvMultishotDropsACQEWhileItWaitsForABuffer: on uring, a RecvMultishot's
// intermediate CQE (data in a group buffer, more to come) that comes while the request waits
// for a buffer (its group ran dry: ENOBUFS, nothing in the kernel) runs no callback.
func TestRequestRecvMultishotDropsACQEWhileItWaitsForABuffer(t *testing.T) {
	l, g, a, b := forgedCQESetup(t, 1)
	m := multishotLog{hold: true}
	h := must(t)(l.RecvMultishot(a, g, 0, m.cb, 0))
	testutil.Write(t, b, []byte("12345678"))
	until(t, l, func() bool { return len(m.data) == 1 })
	testutil.Write(t, b, []byte("9"))
	until(t, l, func() bool { return m.enobufs == 1 })
	forgeRecvMore(t, l, h)
	if err := h.Cancel(); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return m.ended })
	if len(m.data) != 1 || m.enobufs != 1 || !errors.Is(m.lastErr, unix.ECANCELED) {
		t.Fatalf("data %q, %d ENOBUFS, then %v: want one receive, one ENOBUFS, then ECANCELED", m.data, m.enobufs, m.lastErr)
	}
}
