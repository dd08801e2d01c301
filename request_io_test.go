//go:build linux

package ringev_test

// Tests of IO, the request made once and submitted many times: its submissions, what refuses
// one, and the guarantees of requests for each submission (cancel, deadline, CloseFd, Loop.Close).

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// ioResult is what an IO's callback got.
type ioResult struct {
	n   int
	err error
}

// ioRecorder records an IO's completions.
type ioRecorder struct{ got []ioResult }

func (r *ioRecorder) fn(_ *ringev.IO, n int, err error) { r.got = append(r.got, ioResult{n, err}) }

// mustIO returns an IO constructor's IO, failing the test on its error.
func mustIO(t *testing.T) func(*ringev.IO, error) *ringev.IO {
	return func(x *ringev.IO, err error) *ringev.IO {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
}

// busyRead makes a read IO of one byte from fd on l whose callback counts its runs in *runs and
// records a wrong result in *failed. Its first run submits it again, with its byte there
// already, so that the next completion comes in a busy loop's batch (on uring, the request
// turn's); each later run calls then, if not nil.
func busyRead(t *testing.T, l *ringev.Loop, fd int, name string, runs *int, failed *error, then func()) *ringev.IO {
	t.Helper()
	return mustIO(t)(l.NewRead(fd, make([]byte, 1), -1, func(x *ringev.IO, n int, err error) {
		switch *runs++; {
		case err != nil || n != 1:
			*failed = errors.Join(*failed, err, fmt.Errorf("%s: wrong count", name))
		case *runs == 1:
			*failed = errors.Join(*failed, x.Submit())
		case then != nil:
			then()
		}
	}))
}

// TestIOSubmittedManyTimesRunsItsCallbackOncePerSubmission: a read IO and a write IO on a pipe,
// each made once, submitted again from their callbacks 200 times, move 200 bytes in order, one
// callback per submission; then each is freed.
func TestIOSubmittedManyTimesRunsItsCallbackOncePerSubmission(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		const rounds = 200
		var reads, writes int
		var failed error
		wbuf, rbuf := []byte{0}, make([]byte, 1)
		var rd, wr *ringev.IO
		rd = mustIO(t)(l.NewRead(r, rbuf, -1, func(x *ringev.IO, n int, err error) {
			if err != nil || n != 1 || rbuf[0] != byte(reads) || x != rd {
				failed = errors.Join(failed, err, errors.New("read: wrong byte, count or IO"))
				return
			}
			if reads++; reads < rounds {
				wbuf[0] = byte(reads)
				failed = errors.Join(failed, wr.Submit(), rd.Submit())
			}
		}))
		wr = mustIO(t)(l.NewWrite(w, wbuf, -1, func(_ *ringev.IO, n int, err error) {
			if err != nil || n != 1 {
				failed = errors.Join(failed, err, errors.New("write: wrong count"))
			}
			writes++
		}))
		if err := errors.Join(wr.Submit(), rd.Submit()); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return reads == rounds && writes == rounds || failed != nil })
		if failed != nil {
			t.Fatal(failed)
		}
		settle(t, l, 5*time.Millisecond, 3)
		if reads != rounds || writes != rounds {
			t.Fatalf("%d reads and %d writes completed, want %d each", reads, writes, rounds)
		}
		if err := errors.Join(rd.Free(), wr.Free()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestIOSendIsFinishedByTheLoop: a send IO of 1 MiB on a socket pair, far more than its buffers
// hold, completes once with all of it sent (the loop sends the rest of a short send), while a
// recv IO on the other end, submitted again from its callback, receives every byte in order.
func TestIOSendIsFinishedByTheLoop(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		out := make([]byte, 1<<20)
		for i := range out {
			out[i] = byte(i * 7)
		}
		var sent []ioResult
		var got []byte
		var failed error
		mustIO(t)(l.NewSend(a, out, 0, func(_ *ringev.IO, n int, err error) { sent = append(sent, ioResult{n, err}) })).Submit()
		in := make([]byte, 64<<10)
		rd := mustIO(t)(l.NewRecv(b, in, 0, func(x *ringev.IO, n int, err error) {
			if err != nil || n == 0 {
				failed = errors.Join(failed, err, errors.New("recv ended early"))
				return
			}
			got = append(got, in[:n]...)
			if len(got) < len(out) {
				failed = errors.Join(failed, x.Submit())
			}
		}))
		if err := rd.Submit(); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return len(got) == len(out) && len(sent) > 0 || failed != nil })
		if failed != nil {
			t.Fatal(failed)
		}
		if len(sent) != 1 || sent[0].n != len(out) || sent[0].err != nil {
			t.Fatalf("send completions %+v, want one of %d bytes", sent, len(out))
		}
		if !bytes.Equal(got, out) {
			t.Fatal("the bytes received differ from those sent")
		}
	})
}

// TestIOSendShortThenFailingCountsTheBytesSent: a send IO of 1 MiB on a socket pair, more than
// its buffers hold, whose rest fails (the peer closed while the loop sent the rest of the short
// send) completes once with the count of the bytes sent before the error and the error, on
// every backend.
func TestIOSendShortThenFailingCountsTheBytesSent(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		out := make([]byte, 1<<20)
		var rec ioRecorder
		x := mustIO(t)(l.NewSend(a, out, 0, rec.fn))
		if err := x.Submit(); err != nil {
			t.Fatal(err)
		}
		untilWaited(t, l)
		untilWaited(t, l) // the first part sent, the rest waits for room
		if len(rec.got) != 0 {
			t.Fatalf("completions %+v before the peer closed, want none", rec.got)
		}
		if err := testutil.Close(t, b); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return len(rec.got) > 0 })
		if got := rec.got[0]; len(rec.got) != 1 || got.err == nil || got.n <= 0 || got.n >= len(out) {
			t.Fatalf("completions %+v, want one with the bytes sent before the error (between 1 and %d) and the error", rec.got, len(out)-1)
		}
	})
}

// pendingRead makes a read IO on an empty pipe, submits it and waits until the loop has
// waited (on uring the read is in the kernel); it returns the IO, its recorder and the
// pipe's write end.
func pendingRead(t *testing.T, l *ringev.Loop) (*ringev.IO, *ioRecorder, int) {
	t.Helper()
	r, w := testutil.Pipe(t)
	var rec ioRecorder
	x := mustIO(t)(l.NewRead(r, make([]byte, 8), -1, rec.fn))
	if err := x.Submit(); err != nil {
		t.Fatal(err)
	}
	untilWaited(t, l)
	if len(rec.got) != 0 || !x.Pending() {
		t.Fatalf("a read of an empty pipe completed: %+v", rec.got)
	}
	return x, &rec, w
}

// wantIOErr fails the test unless rec got exactly one completion, with an error wrapping want.
func wantIOErr(t *testing.T, rec *ioRecorder, want error) {
	t.Helper()
	if len(rec.got) != 1 || !errors.Is(rec.got[0].err, want) {
		t.Fatalf("completions %+v, want one with %v", rec.got, want)
	}
}

// TestIOSubmitWhilePendingIsRefused: Submit, SetBuf and Free on an IO whose submission has not
// completed return ErrIOPending and change nothing: the one submission completes once, with
// the bytes written later.
func TestIOSubmitWhilePendingIsRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		x, rec, w := pendingRead(t, l)
		for name, err := range map[string]error{"Submit": x.Submit(), "SetBuf": x.SetBuf(make([]byte, 4)), "Free": x.Free()} {
			if !errors.Is(err, ringev.ErrIOPending) {
				t.Errorf("%s on a pending IO: %v, want ErrIOPending", name, err)
			}
		}
		testutil.Write(t, w, []byte("abc"))
		until(t, l, func() bool { return len(rec.got) > 0 })
		settle(t, l, 5*time.Millisecond, 3)
		if len(rec.got) != 1 || rec.got[0].n != 3 || rec.got[0].err != nil || len(x.Buf()) != 8 {
			t.Fatalf("completions %+v (buffer of %d bytes), want one of 3 bytes into the buffer of 8", rec.got, len(x.Buf()))
		}
	})
}

// TestIOCancelEndsThePendingSubmission: Cancel ends a pending read with ECANCELED; the IO's
// next submission reads the bytes written after.
func TestIOCancelEndsThePendingSubmission(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		x, rec, w := pendingRead(t, l)
		if err := x.Cancel(); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return len(rec.got) > 0 })
		wantIOErr(t, rec, unix.ECANCELED)
		if err := x.Submit(); err != nil {
			t.Fatal(err)
		}
		testutil.Write(t, w, []byte("ab"))
		until(t, l, func() bool { return len(rec.got) > 1 })
		if g := rec.got[1]; g.n != 2 || g.err != nil || string(x.Buf()[:2]) != "ab" {
			t.Fatalf("the submission after the cancel got %+v, %q", g, x.Buf()[:2])
		}
	})
}

// TestIODeadlineEndsOnlyThePendingSubmission: SetTimeout ends a pending read with ETIME; the
// next submission has no deadline: it waits past it for the bytes written after.
func TestIODeadlineEndsOnlyThePendingSubmission(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		x, rec, w := pendingRead(t, l)
		if err := x.SetTimeout(2 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return len(rec.got) > 0 })
		wantIOErr(t, rec, unix.ETIME)
		if err := x.Submit(); err != nil {
			t.Fatal(err)
		}
		settle(t, l, 10*time.Millisecond, 3)
		if len(rec.got) != 1 {
			t.Fatalf("the submission after the deadline completed without data: %+v", rec.got[1:])
		}
		testutil.Write(t, w, []byte("a"))
		until(t, l, func() bool { return len(rec.got) > 1 })
		if g := rec.got[1]; g.n != 1 || g.err != nil {
			t.Fatalf("the submission after the deadline got %+v", g)
		}
	})
}

// TestIOAfterCloseFdIsRefused: CloseFd ends an IO's pending submission with ECANCELED, and the
// IO's Submit then returns an error wrapping EBADF, also once a new file has the number.
func TestIOAfterCloseFdIsRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		x, rec, _ := pendingRead(t, l)
		var closed recorder
		must(t)(l.CloseFd(x.Fd(), closed.cb, 0))
		until(t, l, func() bool { return len(rec.got) > 0 && closed.n() > 0 })
		wantIOErr(t, rec, unix.ECANCELED)
		r2, _, _ := testutil.PipeAt(t, x.Fd())
		if err := x.Submit(); !errors.Is(err, unix.EBADF) {
			t.Fatalf("Submit after CloseFd (fd %d now a new pipe's %d): %v, want EBADF", x.Fd(), r2, err)
		}
	})
}

// TestIOOfAClosedLoopRunsNoCallback: Loop.Close with an IO's submission pending runs no
// callback; the IO's Submit then returns ErrClosed.
func TestIOOfAClosedLoopRunsNoCallback(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		x, rec, w := pendingRead(t, l)
		testutil.Write(t, w, []byte("a"))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if len(rec.got) != 0 {
			t.Fatalf("a callback ran at Close: %+v", rec.got)
		}
		if err := x.Submit(); !errors.Is(err, ringev.ErrClosed) {
			t.Fatalf("Submit after Close: %v, want ErrClosed", err)
		}
	})
}

// TestIOFromAnotherGoroutineIsRefused: Submit, SetBuf, Cancel, SetTimeout and Free from a
// goroutine that does not own the loop return ErrNotOwner, and so does NewRead.
func TestIOFromAnotherGoroutineIsRefused(t *testing.T) {
	requireOwnerCheck(t)
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		r, _ := testutil.Pipe(t)
		var rec ioRecorder
		x := mustIO(t)(l.NewRead(r, make([]byte, 8), -1, rec.fn))
		onOtherGoroutine(t, func() {
			_, err := l.NewRead(r, make([]byte, 8), -1, rec.fn)
			errs := map[string]error{"NewRead": err, "Submit": x.Submit(), "SetBuf": x.SetBuf(make([]byte, 2)),
				"Cancel": x.Cancel(), "SetTimeout": x.SetTimeout(time.Second), "Free": x.Free()}
			for name, err := range errs {
				if !errors.Is(err, ringev.ErrNotOwner) {
					t.Errorf("%s from another goroutine: %v, want ErrNotOwner", name, err)
				}
			}
		})
		if x.Pending() {
			t.Fatal("the IO is pending after a Submit from another goroutine")
		}
	})
}

// TestIOFreedIsRefused: an IO's calls after Free return ErrIOFreed, and a nil callback is
// refused when the IO is made.
func TestIOFreedIsRefused(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		r, _ := testutil.Pipe(t)
		if _, err := l.NewRead(r, make([]byte, 8), -1, nil); !errors.Is(err, ringev.ErrNilCallback) {
			t.Errorf("NewRead with a nil callback: %v, want ErrNilCallback", err)
		}
		var rec ioRecorder
		x := mustIO(t)(l.NewRead(r, make([]byte, 8), -1, rec.fn))
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{"Submit": x.Submit(), "SetBuf": x.SetBuf(make([]byte, 2)), "Free": x.Free()} {
			if !errors.Is(err, ringev.ErrIOFreed) {
				t.Errorf("%s after Free: %v, want ErrIOFreed", name, err)
			}
		}
	})
}

// TestIOZeroAllocsPerSubmission: a write and a read IO submitted again and again on a socket
// pair allocate nothing per round.
func TestIOZeroAllocsPerSubmission(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, b := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var sent, recvd int
		var failed error
		count := func(k *int) ringev.IOFunc {
			return func(_ *ringev.IO, n int, err error) {
				if err != nil || n != 4 {
					failed = errors.Join(failed, err, errors.New("wrong count"))
				}
				*k++
			}
		}
		wr := mustIO(t)(l.NewSend(a, []byte("ping"), 0, count(&sent)))
		rd := mustIO(t)(l.NewRecv(b, make([]byte, 4), 0, count(&recvd)))
		round := func() {
			want := recvd + 1
			if err := errors.Join(wr.Submit(), rd.Submit()); err != nil {
				failed = errors.Join(failed, err)
			}
			for i := 0; i < 1000 && recvd < want && failed == nil; i++ {
				failed = l.Once()
			}
			for i := 0; i < 1000 && wr.Pending() && failed == nil; i++ {
				failed = l.Once()
			}
		}
		for range 100 {
			round()
		}
		allocs := testing.AllocsPerRun(1000, round)
		if failed != nil {
			t.Fatal(failed)
		}
		if sent < 1100 || recvd < 1100 {
			t.Fatalf("%d sends, %d recvs completed", sent, recvd)
		}
		if allocs != 0 {
			t.Fatalf("%.2f allocations per send+recv round, want 0", allocs)
		}
	})
}

// TestIOFollowsRegisterFile: an IO made on a registered fd uses its slot while the fd is
// registered: a submission prepared before UnregisterFile reaches the kernel first and
// completes, and the next ones, made without the slot, complete too.
func TestIOFollowsRegisterFile(t *testing.T) {
	requireRegisteredFiles(t)
	r, w := testutil.Pipe(t)
	l := newLoop(t, "uring")
	register(t, l, r)
	var rec ioRecorder
	x := mustIO(t)(l.NewRead(r, make([]byte, 8), -1, rec.fn))
	for i := range 3 {
		if err := x.Submit(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := l.UnregisterFile(r); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Write(t, w, []byte("a"))
		until(t, l, func() bool { return len(rec.got) > i })
		if g := rec.got[i]; g.n != 1 || g.err != nil {
			t.Fatalf("submission %d (the first prepared with the slot, then unregistered) got %+v", i, g)
		}
	}
}

// TestIOCallbackPanicLeavesLoopUsable: an IO's callback that panics out of Once, recovered by
// Once's caller, leaves the loop usable on every backend: the next Once is not refused as
// nested, the other IO whose completion came in the same batch runs, the IO that panicked can
// be submitted again and completes, and a nested Once from a callback is still refused. The
// two IOs resubmit themselves once with their bytes there already, so that the panic comes in
// a busy loop's batch (on uring, the request turn's).
func TestIOCallbackPanicLeavesLoopUsable(t *testing.T) {
	const boom = "an IO callback's panic"
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r1, w1 := testutil.Pipe(t)
		r2, w2 := testutil.Pipe(t)
		l := newLoop(t, backend)
		panics, firstRuns, otherRuns := 0, 0, 0
		var nested, failed error
		first := mustIO(t)(l.NewRead(r1, make([]byte, 1), -1, func(x *ringev.IO, n int, err error) {
			firstRuns++
			switch {
			case err != nil || n != 1:
				failed = errors.Join(failed, err, errors.New("first read: wrong count"))
			case firstRuns == 1:
				failed = errors.Join(failed, x.Submit())
			case firstRuns == 2:
				panic(boom)
			default:
				nested = l.Once()
			}
		}))
		other := busyRead(t, l, r2, "other read", &otherRuns, &failed, nil)
		testutil.Write(t, w1, []byte("ab"))
		testutil.Write(t, w2, []byte("cd"))
		if err := errors.Join(first.Submit(), other.Submit()); err != nil {
			t.Fatal(err)
		}
		// turn is one Once that recovers the callback's panic, and only that.
		turn := func() { onceRecovering(t, l, boom, &panics) }
		for i := 0; panics == 0 || otherRuns < 2; i++ {
			if i == 100 || failed != nil {
				t.Fatalf("after %d Onces: %d panics, the other IO ran %d times (%v)", i, panics, otherRuns, failed)
			}
			turn()
		}
		if err := first.Submit(); err != nil {
			t.Fatalf("Submit of the IO whose callback panicked: %v", err)
		}
		testutil.Write(t, w1, []byte("e"))
		for i := 0; firstRuns < 3; i++ {
			if i == 100 {
				t.Fatal("the resubmitted IO did not complete in 100 Onces")
			}
			turn()
		}
		if panics != 1 || otherRuns != 2 || failed != nil {
			t.Fatalf("%d panics, the other IO ran %d times (%v): want 1 and 2", panics, otherRuns, failed)
		}
		if !errors.Is(nested, ringev.ErrNested) {
			t.Fatalf("Once from an IO's callback: %v, want ErrNested", nested)
		}
	})
}

// TestIOCallbackPanicLeavesNoGuardOnOtherLoops: after an IO's callback of loop A panicked out
// of A's Once (recovered by its caller), A's Once called from an IO's callback of another loop
// B of the same goroutine is not refused as nested: it runs A's posted function. Both
// callbacks come in a busy loop's batch (on uring, the request turn's: each read resubmits
// itself with its byte there already).
func TestIOCallbackPanicLeavesNoGuardOnOtherLoops(t *testing.T) {
	requireOwnerCheck(t)
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		p := panickedAOnceFromB(t, backend, func(once func()) { once() })
		posted := false
		if err := p.a.Post(func() { posted = true }); err != nil {
			t.Fatal(err)
		}
		until(t, p.b, func() bool { return p.runsB == 2 })
		if p.failed != nil || p.fromB != nil || !posted {
			t.Fatalf("A's Once from B's callback: %v, A's posted function ran: %v (%v); want nil and true", p.fromB, posted, p.failed)
		}
	})
}

// TestIOCallbackNestingGuardFindsTheTurnByFramePointers: where the owner check is on (amd64,
// arm64), the frame pointers link the frames as the nesting guard reads them (a frame's record:
// its caller's frame pointer, then its return address), so that it tells the turn whose
// callback is running from a slot that kept a panicked turn's mark.
func TestIOCallbackNestingGuardFindsTheTurnByFramePointers(t *testing.T) {
	requireOwnerCheck(t)
	if !ringev.FramesLinked() {
		t.Fatal("the frame pointers do not link the frames as the nesting guard reads them")
	}
}

// TestIOCallbackNestedAcrossLoopsReturnsErrNested: loop A's Once called from a callback of
// loop B, whose Once runs inside an IO's callback of A's, returns ErrNested on every backend:
// A's callback runs in a busy loop's batch (on uring, the request turn's: the read resubmits
// itself with its byte there already).
func TestIOCallbackNestedAcrossLoopsReturnsErrNested(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		ra, wa := testutil.Pipe(t)
		rb, wb := testutil.Pipe(t)
		a, b := newLoop(t, backend), newLoop(t, backend)
		runsA, runsB := 0, 0
		var failed, fromB error
		ioB := mustIO(t)(b.NewRead(rb, make([]byte, 1), -1, func(_ *ringev.IO, n int, err error) {
			if runsB++; err != nil || n != 1 {
				failed = errors.Join(failed, err, errors.New("B's read: wrong count"))
				return
			}
			fromB = a.Once()
		}))
		ioA := busyRead(t, a, ra, "A's read", &runsA, &failed, func() {
			for i := 0; runsB == 0 && failed == nil; i++ {
				if i == 100 {
					failed = errors.New("B's read did not complete in 100 Onces of B")
				} else if err := b.Once(); err != nil {
					failed = errors.Join(failed, err)
				}
			}
		})
		testutil.Write(t, wa, []byte("ab"))
		testutil.Write(t, wb, []byte("c"))
		if err := errors.Join(ioA.Submit(), ioB.Submit()); err != nil {
			t.Fatal(err)
		}
		until(t, a, func() bool { return runsA == 2 || failed != nil })
		if failed != nil || runsB != 1 || !errors.Is(fromB, ringev.ErrNested) {
			t.Fatalf("A's Once from B's callback inside A's: %v (B's read ran %d times; %v), want ErrNested", fromB, runsB, failed)
		}
	})
}

// TestIOCallbackNestedOnceRunCloseReturnErrNested: Once and Run called from an IO's callback
// return ErrNested, and Loop.Close an error wrapping it, on every backend, also when the
// callback runs in a busy loop's batch (the read resubmits itself with its byte there already:
// on uring, the request turn's); the loop works afterwards.
func TestIOCallbackNestedOnceRunCloseReturnErrNested(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		runs := 0
		var nested error
		rd := mustIO(t)(l.NewRead(r, make([]byte, 1), -1, func(x *ringev.IO, n int, err error) {
			if runs++; err != nil || n != 1 {
				nested = errors.Join(nested, err, errors.New("read: wrong count"))
				return
			}
			if runs == 1 {
				nested = errors.Join(nested, x.Submit())
				return
			}
			if err := l.Once(); !errors.Is(err, ringev.ErrNested) {
				nested = errors.Join(nested, errors.New("Once: want ErrNested"), err)
			}
			if err := l.Run(); !errors.Is(err, ringev.ErrNested) {
				nested = errors.Join(nested, errors.New("Run: want ErrNested"), err)
			}
			if err := l.Close(); !errors.Is(err, ringev.ErrNested) {
				nested = errors.Join(nested, errors.New("Close: want an error wrapping ErrNested"), err)
			}
		}))
		testutil.Write(t, w, []byte("ab"))
		if err := rd.Submit(); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return runs >= 2 })
		if nested != nil {
			t.Fatal(nested)
		}
		// Afterwards the loop works: the read, submitted again, gets the next byte.
		if err := rd.Submit(); err != nil {
			t.Fatalf("Submit after the nested calls: %v", err)
		}
		testutil.Write(t, w, []byte("c"))
		until(t, l, func() bool { return runs == 3 })
	})
}

// TestIOCancelBeforeTheWaitNeverReachesTheKernel: a read IO cancelled right after its
// submission, with another IO's submission after it in the SQ, never reaches the kernel on any
// backend, though it would complete at once: its callback gets ECANCELED and the pipe keeps its
// bytes; the other IO completes. (On uring the cancel finds the IO's SQE by its user_data and
// turns it into a NOP.)
func TestIOCancelBeforeTheWaitNeverReachesTheKernel(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, _ := testutil.PipeHolding(t, "ab")
		r2, _ := testutil.PipeHolding(t, "c")
		l := newLoop(t, backend)
		var rec, other ioRecorder
		x := mustIO(t)(l.NewRead(r, make([]byte, 1), -1, rec.fn))
		y := mustIO(t)(l.NewRead(r2, make([]byte, 1), -1, other.fn))
		if err := errors.Join(x.Submit(), y.Submit(), x.Cancel()); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return len(rec.got) > 0 && len(other.got) > 0 })
		wantIOErr(t, &rec, unix.ECANCELED)
		if len(other.got) != 1 || other.got[0].n != 1 || other.got[0].err != nil {
			t.Fatalf("the other IO's completions %+v, want one of 1 byte", other.got)
		}
		testutil.ExpectHeld(t, r, "ab")
	})
}

// TestIODeadlineBeforeTheEnterIsLinked: a deadline set on a read IO's submission before the
// loop's next enter, with another IO's submission after it, ends it with ETIME; on uring it
// goes as a LINK_TIMEOUT when the IO's SQE is the SQ's last, and as the loop's timer
// otherwise.
func TestIODeadlineBeforeTheEnterIsLinked(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, _ := testutil.Pipe(t)
		r2, _ := testutil.Pipe(t)
		l := newLoop(t, backend)
		var last, first ioRecorder
		x := mustIO(t)(l.NewRead(r, make([]byte, 1), -1, last.fn))
		y := mustIO(t)(l.NewRead(r2, make([]byte, 1), -1, first.fn))
		if err := errors.Join(y.Submit(), x.Submit(), x.SetTimeout(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if backend == "uring" && !ringev.IOLinked(x) {
			t.Fatal("the deadline set on the SQ's last submission was not linked")
		}
		if err := y.SetTimeout(2 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if backend == "uring" && ringev.IOLinked(y) {
			t.Fatal("a deadline was linked to a submission whose SQE is not the SQ's last")
		}
		until(t, l, func() bool { return len(last.got) > 0 && len(first.got) > 0 })
		wantIOErr(t, &last, unix.ETIME)
		wantIOErr(t, &first, unix.ETIME)
	})
}

// TestIOCallbackPanicLeavesNoGuardAStackSlotHoldingTheLoopRevives: after a callback of loop A
// panicked out of A's Once (recovered), A's Once from a callback of loop B's turn is not
// ErrNested, even where the stack in which A's turn ran now holds pointers to A in a frame of
// the caller's (locals, here an array of them): A's turn is not running, whatever the words
// at its old place hold.
func TestIOCallbackPanicLeavesNoGuardAStackSlotHoldingTheLoopRevives(t *testing.T) {
	onceFromBOverWords(t, func(a *ringev.Loop) uintptr { return uintptr(unsafe.Pointer(a)) })
}

// TestIOCallbackPanicLeavesNoGuardAStackSlotHoldingTheMarkRevives: the same where the caller's
// frame holds A's mark (its address complemented, what A's turn writes in its frame), as a
// slot of a live frame not written since the panicked turn ran there does: A's turn is not
// running there, though a turn (B's) runs below.
func TestIOCallbackPanicLeavesNoGuardAStackSlotHoldingTheMarkRevives(t *testing.T) {
	onceFromBOverWords(t, func(a *ringev.Loop) uintptr { return ^uintptr(unsafe.Pointer(a)) })
}

// onceFromBOverWords makes A's callback panic out of A's Once 4 KiB down the stack
// (panickedAOnceFromB), then runs B's Once until B's callback has called A's Once, from below
// 12 KiB of frames whose words are word(A), where A's turn ran; it fails the test unless A's
// Once returned nil there, on every backend.
func onceFromBOverWords(t *testing.T, word func(a *ringev.Loop) uintptr) {
	requireOwnerCheck(t)
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		p := panickedAOnceFromB(t, backend, func(once func()) { withWordsOnStack(0, once) }) // A's turn 4 KiB down
		w := word(p.a)
		p.a.Post(func() {})          // A's Once from B's callback has this to run
		withWordsOnStack(w, func() { // where A's turn ran
			withWordsOnStack(w, func() {
				withWordsOnStack(w, func() { until(t, p.b, func() bool { return p.runsB == 2 }) })
			})
		})
		if p.failed != nil || p.fromB != nil {
			t.Fatalf("A's Once from B's callback: %v (%v); want nil", p.fromB, p.failed)
		}
	})
}

// withWordsOnStack calls f from a frame whose 4 KiB of stack hold w.
//
//go:noinline
func withWordsOnStack(w uintptr, f func()) {
	var pad [512]uintptr
	for i := range pad {
		pad[i] = w
	}
	f()
	for i := range pad {
		if pad[i] != w {
			panic("the pad changed")
		}
	}
}

// aPanickedB is what panickedAOnceFromB made: loops a and b of the test's goroutine, whose
// busy reads count their runs (runsA, runsB) and record a wrong result in failed; fromB is what
// a.Once returned when b's read called it.
type aPanickedB struct {
	a, b          *ringev.Loop
	runsA, runsB  int
	failed, fromB error
}

// panickedAOnceFromB makes loops A and B with a busy read each (busyRead, both with their
// bytes written and submitted): A's callback panics, B's calls A's Once (fromB). It then calls
// A's Once through call, recovering the panic, until A's callback has panicked out of it once.
func panickedAOnceFromB(t *testing.T, backend string, call func(once func())) *aPanickedB {
	t.Helper()
	const boom = "loop A's callback's panic"
	ra, wa := testutil.Pipe(t)
	rb, wb := testutil.Pipe(t)
	p := &aPanickedB{a: newLoop(t, backend), b: newLoop(t, backend)}
	ioA := busyRead(t, p.a, ra, "A's read", &p.runsA, &p.failed, func() { panic(boom) })
	ioB := busyRead(t, p.b, rb, "B's read", &p.runsB, &p.failed, func() { p.fromB = p.a.Once() })
	testutil.Write(t, wa, []byte("ab"))
	testutil.Write(t, wb, []byte("cd"))
	if err := errors.Join(ioA.Submit(), ioB.Submit()); err != nil {
		t.Fatal(err)
	}
	panics := 0
	for i := 0; panics == 0; i++ {
		if i == 100 || p.failed != nil {
			t.Fatalf("after %d Onces of A: no panic (%v)", i, p.failed)
		}
		call(func() { onceRecovering(t, p.a, boom, &panics) })
	}
	return p
}
