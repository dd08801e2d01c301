package ringev_test

import (
	"testing"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

func TestScratchGroupCloseInFlight(t *testing.T) {
	brkEach(t, func(t *testing.T, backend string) {
		l := brkLoop(t, backend)
		a, b := brkSocketpair(t)
		g, _ := l.NewBufferGroup(2, 64)
		runs := 0
		last := false
		h, err := l.RecvMultishot(a, g, 0, func(c *ringev.Completion) {
			runs++
			t.Logf("cb N %d err %v more %v bid %d buf %q", c.N, c.Err, c.More, c.BufferID(), c.Buf)
			c.ReleaseBuffer()
			last = last || !c.More
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		fired := false
		l.AddTimer(time.Millisecond, func(*ringev.Timer) { fired = true })
		brkRunUntil(t, l, time.Second, "t", func() bool { return fired })
		t.Logf("Close: %v", g.Close())
		unix.Write(b, []byte("hello"))
		g2, err := l.NewBufferGroup(2, 64)
		t.Logf("g2 %v", err)
		_ = g2
		fired = false
		l.AddTimer(50*time.Millisecond, func(*ringev.Timer) { fired = true })
		brkRunUntil(t, l, time.Second, "t", func() bool { return fired })
		t.Logf("runs %d last %v pending %v", runs, last, h.Pending())
		h.Cancel()
		fired = false
		l.AddTimer(50*time.Millisecond, func(*ringev.Timer) { fired = true })
		brkRunUntil(t, l, time.Second, "t", func() bool { return fired })
		t.Logf("runs %d last %v pending %v", runs, last, h.Pending())
	})
}
