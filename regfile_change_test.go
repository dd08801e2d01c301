//go:build linux

package ringev_test

// Tests of registration changes while requests are made: UnregisterFile and RegisterFile before,
// during and inside requests keep every request and every byte.

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestUnregisterFileSubmitsThePreparedRequestsFirst: a Read made on a registered fd and not yet
// submitted when UnregisterFile empties the slot still reads its byte (UnregisterFile submits
// it first, and the kernel keeps the registered file to its completion).
func TestUnregisterFileSubmitsThePreparedRequestsFirst(t *testing.T) {
	r, _ := testutil.PipeHolding(t, "ab")
	l := newLoop(t, "uring")
	register(t, l, r)
	var rec recorder
	must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	if err := l.UnregisterFile(r); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return rec.n() > 0 })
	if c := wantOne(t, &rec, 1); string(rec.bufs[0]) != "a" {
		t.Fatalf("read %q (%+v), want \"a\"", rec.bufs[0], c)
	}
}

// TestUnregisterFileBetweenAReadAndItsSetTimeout: UnregisterFile right after a Read on the
// registered fd submits the Read; a SetTimeout made then is enforced by the loop's timer (the
// Read's SQE is the kernel's: no LINK_TIMEOUT can follow it), and the Read ends with ETIME
// without taking the pipe's byte, which arrives after.
func TestUnregisterFileBetweenAReadAndItsSetTimeout(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	register(t, l, r)
	var rec recorder
	h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	if err := l.UnregisterFile(r); err != nil {
		t.Fatal(err)
	}
	if err := h.SetTimeout(5 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ringev.RequestLinked(h) {
		t.Fatal("a LINK_TIMEOUT was linked to a Read that UnregisterFile submitted")
	}
	until(t, l, func() bool { return rec.n() > 0 })
	if c := rec.got[0]; rec.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("%d completions, first N %d err %v; want one with ETIME", rec.n(), c.N, c.Err)
	}
	quiet(t, l)
	testutil.Write(t, w, []byte("z"))
	testutil.ExpectHeld(t, r, "z")
}

// TestUnregisterFileAfterALinkedDeadline: a Read given a deadline right after it is made
// (linked as a LINK_TIMEOUT) on a registered fd, then UnregisterFile: the two SQEs go to the
// kernel together, the Read ends once with ETIME, and the pipe keeps its byte.
func TestUnregisterFileAfterALinkedDeadline(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	register(t, l, r)
	var rec recorder
	h := must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 0))
	if err := h.SetTimeout(5 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !ringev.RequestLinked(h) {
		t.Fatal("the deadline set right after the Read is not linked")
	}
	if err := l.UnregisterFile(r); err != nil {
		t.Fatal(err)
	}
	until(t, l, func() bool { return rec.n() > 0 })
	quiet(t, l)
	if c := rec.got[0]; rec.n() != 1 || !errors.Is(c.Err, unix.ETIME) {
		t.Fatalf("%d completions, first N %d err %v; want one with ETIME", rec.n(), c.N, c.Err)
	}
	testutil.Write(t, w, []byte("z"))
	testutil.ExpectHeld(t, r, "z")
}

// TestUnregisterFileWithAFullSQAndQueuedDeadlines: 600 one-byte Recvs on a registered socket
// made in one handler (the SQ, 256 entries, fills: the rest wait in the queue), every other one
// with a deadline set after it (queued ones are linked at the flush), then UnregisterFile in the
// same handler: every Recv ends once, those without a deadline with their byte when the peer
// writes 300 bytes, and no byte is lost (received + left in the socket = written).
func TestUnregisterFileWithAFullSQAndQueuedDeadlines(t *testing.T) {
	const n = 600
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	calls := make([]int, n)
	got := 0
	bytesIn := 0
	ran := false
	cb := func(c *ringev.Completion) {
		calls[c.Token]++
		got++
		if c.Err == nil {
			bytesIn += c.N
		} else if !errors.Is(c.Err, unix.ETIME) {
			t.Errorf("recv %d: %v, want a byte or ETIME", c.Token, c.Err)
		}
	}
	l.AddTimer(0, func(*ringev.Timer) {
		ran = true
		for i := range n {
			h, err := l.Recv(a, make([]byte, 1), 0, cb, uint64(i))
			if err != nil {
				t.Errorf("Recv %d: %v", i, err)
				return
			}
			if i%2 == 1 {
				if err := h.SetTimeout(20 * time.Millisecond); err != nil {
					t.Errorf("SetTimeout %d: %v", i, err)
				}
			}
		}
		if err := l.UnregisterFile(a); err != nil {
			t.Errorf("UnregisterFile with a full SQ: %v", err)
		}
	})
	untilFor(t, l, deadline, "the handler", func() bool { return ran })
	untilFor(t, l, deadline, "the deadlines", func() bool { return got >= n/2 })
	testutil.Write(t, b, make([]byte, n/2))
	untilFor(t, l, deadline, "600 recvs", func() bool { return got >= n })
	quiet(t, l)
	for i, k := range calls {
		if k != 1 {
			t.Fatalf("recv %d: %d callbacks, want 1", i, k)
		}
	}
	rest := 0
	buf := make([]byte, n)
	if k, err := unix.Read(a, buf); err == nil {
		rest = k
	}
	if bytesIn+rest != n/2 {
		t.Fatalf("%d bytes received + %d left, %d written", bytesIn, rest, n/2)
	}
}

// TestUnregisterFileDuringALargeSendFinishesIt: a Send larger than the socket buffer on a
// registered fd, unregistered while the send is in the kernel, is finished by the loop with
// every byte (the rest goes out without the emptied slot).
func TestUnregisterFileDuringALargeSendFinishesIt(t *testing.T) {
	a, b := testutil.Socketpair(t)
	if err := unix.SetsockoptInt(a, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, "uring")
	register(t, l, a)
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	var snd recorder
	must(t)(l.Send(a, big, 0, snd.cb, 0))
	untilWaited(t, l) // the send is in the kernel, short of room
	if err := l.UnregisterFile(a); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 0, len(big))
	buf := make([]byte, 64<<10)
	var onRecv ringev.Callback
	var rcvErr error
	onRecv = func(c *ringev.Completion) {
		if c.Err != nil || c.N == 0 {
			rcvErr = c.Err
			return
		}
		got = append(got, c.Buf...)
		if len(got) < len(big) {
			must(t)(l.Recv(b, buf, 0, onRecv, 0))
		}
	}
	must(t)(l.Recv(b, buf, 0, onRecv, 0))
	until(t, l, func() bool { return snd.n() > 0 && len(got) == len(big) || rcvErr != nil })
	wantOne(t, &snd, len(big))
	if !bytes.Equal(got, big) {
		t.Fatal("received bytes differ from those sent")
	}
}

// TestUnregisterFileDuringALargeWriteFinishesIt: a Write of 1 MiB to a registered
// pipe, unregistered while the write is in the kernel (the pipe holds 64 KiB), is finished by
// the loop with every byte, in order, while an fd handler drains the pipe.
func TestUnregisterFileDuringALargeWriteFinishesIt(t *testing.T) {
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	register(t, l, w)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	var wr recorder
	must(t)(l.Write(w, big, -1, wr.cb, 0))
	untilWaited(t, l) // the write is in the kernel, short of room
	if err := l.UnregisterFile(w); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 0, len(big))
	buf := make([]byte, 64<<10)
	addFd(t, l, r, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {
		if k, err := unix.Read(r, buf); k > 0 && err == nil {
			got = append(got, buf[:k]...)
		}
	})
	until(t, l, func() bool { return wr.n() > 0 && len(got) == len(big) })
	wantOne(t, &wr, len(big))
	if string(got) != string(big) {
		t.Fatal("the bytes read differ from those written")
	}
}

// TestUnregisterFileOfAParkedRecvMultishotRearmsAndKeepsEveryByte: a RecvMultishot on a
// registered socket whose group of 2 buffers runs dry (ENOBUFS, parked), then UnregisterFile,
// then the buffers released: it re-arms (without the slot) and receives the rest, every byte in
// order; CloseFd then ends it with ECANCELED.
func TestUnregisterFileOfAParkedRecvMultishotRearmsAndKeepsEveryByte(t *testing.T) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	g, err := l.NewBufferGroup(2, 8)
	if err != nil {
		t.Fatalf("NewBufferGroup: %v", err)
	}
	var got []byte
	var held []int
	enobufs, last := 0, false
	var lastErr error
	cb := func(c *ringev.Completion) {
		switch {
		case !c.More:
			last, lastErr = true, c.Err
		case errors.Is(c.Err, unix.ENOBUFS):
			enobufs++
		case c.Err == nil:
			got = append(got, c.Buf...)
			held = append(held, c.BufferID())
		default:
			t.Errorf("recv-multishot: %v", c.Err)
		}
	}
	must(t)(l.RecvMultishot(a, g, 0, cb, 0))
	untilWaited(t, l)
	want := make([]byte, 64)
	for i := range want {
		want[i] = byte(i)
	}
	sentTo := 0
	for sentTo < len(want) && enobufs == 0 {
		testutil.Write(t, b, want[sentTo:sentTo+8])
		sentTo += 8
		until(t, l, func() bool { return len(got) >= sentTo || enobufs > 0 })
	}
	if enobufs == 0 {
		t.Fatalf("no ENOBUFS after %d bytes into 2 held buffers of 8", sentTo)
	}
	if err := l.UnregisterFile(a); err != nil {
		t.Fatal(err)
	}
	testutil.Write(t, b, want[sentTo:])
	// Release the buffers as they come back, until every byte arrived.
	untilFor(t, l, deadline, "64 bytes", func() bool {
		for _, id := range held {
			g.Release(id)
		}
		held = held[:0]
		return len(got) >= len(want) || t.Failed()
	})
	if string(got) != string(want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	must(t)(l.CloseFd(a, func(*ringev.Completion) {}, 0))
	until(t, l, func() bool { return last })
	if !errors.Is(lastErr, unix.ECANCELED) {
		t.Fatalf("the last completion: %v, want ECANCELED", lastErr)
	}
}

// TestRegisterFileFlipsDuringARecvMultishotKeepEveryByte: a RecvMultishot on a registered
// socket into a group of 4 buffers of 16 bytes, its callback flipping the registration at every
// completion and releasing the buffer only every other time (so the group runs dry and the
// request is re-armed, with or without the slot): 4 KiB written in 64-byte pieces all arrive
// in order; CloseFd then ends it with ECANCELED.
func TestRegisterFileFlipsDuringARecvMultishotKeepEveryByte(t *testing.T) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	g, err := l.NewBufferGroup(4, 16)
	if err != nil {
		t.Fatalf("NewBufferGroup: %v", err)
	}
	reg := true
	var got []byte
	var held []int
	last := false
	var lastErr error
	k, dry := 0, 0
	cb := func(c *ringev.Completion) {
		if !c.More { // CloseFd's: the fd is closed
			last, lastErr = true, c.Err
			return
		}
		var err error
		if reg {
			err = l.UnregisterFile(a)
		} else {
			err = l.RegisterFile(a)
		}
		if err != nil {
			t.Errorf("flipping the registration (registered %v): %v", reg, err)
		}
		reg = !reg
		switch {
		case errors.Is(c.Err, unix.ENOBUFS):
			dry++
		case c.Err != nil:
			t.Errorf("recv-multishot: %v", c.Err)
		default:
			got = append(got, c.Buf...)
			if k++; k%2 == 0 {
				c.ReleaseBuffer()
			} else {
				held = append(held, c.BufferID())
			}
		}
	}
	must(t)(l.RecvMultishot(a, g, 0, cb, 0))
	want := make([]byte, 4096)
	for i := range want {
		want[i] = byte(i * 13)
	}
	sent := 0
	untilFor(t, l, deadline, "4 KiB", func() bool {
		if sent < len(want) {
			testutil.Write(t, b, want[sent:sent+64])
			sent += 64
		}
		for _, id := range held {
			g.Release(id)
		}
		held = held[:0]
		return len(got) >= len(want) || last || t.Failed()
	})
	if string(got) != string(want) {
		t.Fatalf("received %d bytes, not the %d written in order", len(got), len(want))
	}
	if dry == 0 {
		t.Fatal("the group never ran dry: no re-arm was tested")
	}
	must(t)(l.CloseFd(a, func(*ringev.Completion) {}, 0))
	until(t, l, func() bool { return last })
	if !errors.Is(lastErr, unix.ECANCELED) {
		t.Fatalf("the last completion: %v, want ECANCELED", lastErr)
	}
}

// TestRegisterFileChangesFromCallbacksAndHandlersKeepEveryByte: UnregisterFile and RegisterFile
// called from a request's callback and from an fd handler on the fd whose requests keep going: an
// echo of 200 rounds, the registration flipped at every round, keeps every byte in order.
func TestRegisterFileChangesFromCallbacksAndHandlersKeepEveryByte(t *testing.T) {
	a, b := testutil.Socketpair(t)
	l := newLoop(t, "uring")
	register(t, l, a)
	const rounds = 200
	sent, echoed := 0, 0
	var got []byte
	buf := make([]byte, 8)
	reg := true
	flip := func() {
		var err error
		if reg {
			err = l.UnregisterFile(a)
		} else {
			err = l.RegisterFile(a)
		}
		if err != nil {
			t.Errorf("flipping the registration of fd %d (registered %v): %v", a, reg, err)
		}
		reg = !reg
	}
	var onRecv, onSend ringev.Callback
	onSend = func(c *ringev.Completion) {
		if c.Err != nil {
			t.Errorf("send: %v", c.Err)
			return
		}
		flip()
		must(t)(l.Recv(a, buf, 0, onRecv, 0))
		flip()
	}
	onRecv = func(c *ringev.Completion) {
		if c.Err != nil || c.N == 0 {
			t.Errorf("recv: N %d err %v", c.N, c.Err)
			return
		}
		got = append(got, c.Buf...)
		echoed++
		if sent < rounds {
			msg := []byte{byte(sent)}
			sent++
			must(t)(l.Send(a, msg, 0, onSend, 0))
			flip()
		}
	}
	// The peer echoes what a sends, through an fd handler that also flips a's registration.
	addFd(t, l, b, ringev.Read, func(ev *ringev.FdEvent, f ringev.Flags) {
		var p [64]byte
		k, err := unix.Read(b, p[:])
		if err != nil || k == 0 {
			return
		}
		flip()
		testutil.Write(t, b, p[:k])
	})
	sent++
	must(t)(l.Send(a, []byte{0}, 0, onSend, 0))
	untilFor(t, l, deadline, "200 echoes", func() bool { return echoed >= rounds || t.Failed() })
	for i, c := range got[:rounds] {
		if c != byte(i) {
			t.Fatalf("echo %d is %d: bytes out of order or lost", i, c)
		}
	}
}
