//go:build linux

package ringev_test

// Tests of the CQEs the uring backend holds in its ring for their callbacks (a one-shot
// request's CQE goes from the ring to its callback): their order beside the completions the
// loop queues, a last callback that panics, and Loop.Close with CQEs still held.

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"github.com/ringev/ringev/uring"
)

// order records the tokens of the completions it gets, in the order their callbacks ran.
type order struct{ tokens []uint64 }

func (o *order) cb(c *ringev.Completion) { o.tokens = append(o.tokens, c.Token) }

// TestRequestHeldCQEsKeepTheirOrderBesideQueuedCompletions: a read, a SubmitSQE NOP (whose CQE
// the loop takes when it reads it and queues) and another read, all completing in the enter
// that submits them, run their callbacks in the order of their CQEs.
func TestRequestHeldCQEsKeepTheirOrderBesideQueuedCompletions(t *testing.T) {
	r1, w1 := testutil.Pipe(t)
	r2, w2 := testutil.Pipe(t)
	testutil.Write(t, w1, []byte("a"))
	testutil.Write(t, w2, []byte("b"))
	l := newLoop(t, "uring")
	var o order
	must(t)(l.Read(r1, make([]byte, 1), -1, o.cb, 1))
	var nop uring.SQE
	nop.PrepNop()
	must(t)(l.SubmitSQE(&nop, nil, o.cb, 2))
	must(t)(l.Read(r2, make([]byte, 1), -1, o.cb, 3))
	until(t, l, func() bool { return len(o.tokens) == 3 })
	if fmt.Sprint(o.tokens) != "[1 2 3]" {
		t.Fatalf("callbacks ran in the order %v, want [1 2 3] (the CQEs' order)", o.tokens)
	}
}

// TestRequestCancelInACallbackRunsAfterTheHeldCQEs: in the first of three reads' callbacks, a
// request that never reaches the kernel is made and cancelled: its ECANCELED completion, which
// the loop learns of then, runs after the other two reads, whose CQEs it had read already.
func TestRequestCancelInACallbackRunsAfterTheHeldCQEs(t *testing.T) {
	var rs [3]int
	for i := range rs {
		r, w := testutil.Pipe(t)
		testutil.Write(t, w, []byte("x"))
		rs[i] = r
	}
	idle, _ := testutil.Pipe(t)
	l := newLoop(t, "uring")
	var o order
	first := func(c *ringev.Completion) {
		o.cb(c)
		h, err := l.Read(idle, make([]byte, 1), -1, o.cb, 9)
		if err != nil {
			t.Error(err)
			return
		}
		if err := h.Cancel(); err != nil {
			t.Error(err)
		}
	}
	must(t)(l.Read(rs[0], make([]byte, 1), -1, first, 0))
	must(t)(l.Read(rs[1], make([]byte, 1), -1, o.cb, 1))
	must(t)(l.Read(rs[2], make([]byte, 1), -1, o.cb, 2))
	until(t, l, func() bool { return len(o.tokens) == 4 })
	if fmt.Sprint(o.tokens) != "[0 1 2 9]" {
		t.Fatalf("callbacks ran in the order %v, want [0 1 2 9]", o.tokens)
	}
}

// TestRequestLastCallbackThatPanicsGivesBackItsRecord: a read whose callback panics out of Once
// leaves no record out of the pool, and the loop goes on running requests with the records it
// has.
func TestRequestLastCallbackThatPanicsGivesBackItsRecord(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		boom := func(*ringev.Completion) { panic("callback") }
		must(t)(l.Read(r, make([]byte, 1), -1, boom, 0))
		testutil.Write(t, w, []byte("x"))
		panicked := false
		for i := 0; !panicked; i++ {
			if i == 100 {
				t.Fatal("the callback did not run in 100 Onces")
			}
			func() {
				defer func() { panicked = recover() != nil }()
				l.AddTimer(time.Millisecond, func(*ringev.Timer) {})
				l.Once()
			}()
		}
		if made, free := ringev.RequestRecords(l); made != free {
			t.Fatalf("after the panic: %d records made, %d in the pool", made, free)
		}
		var rec recorder
		must(t)(l.Read(r, make([]byte, 1), -1, rec.cb, 1))
		testutil.Write(t, w, []byte("y"))
		until(t, l, func() bool { return rec.n() > 0 })
		if c := rec.last(t); c.Err != nil || string(rec.bufs[0]) != "y" {
			t.Fatalf("the read after the panic: N %d err %v buf %q", c.N, c.Err, rec.bufs[0])
		}
		if made, free := ringev.RequestRecords(l); made != 1 || free != 1 {
			t.Fatalf("%d records made, %d in the pool: want the one record, reused", made, free)
		}
	})
}

// TestRequestHeldAcceptsAreClosedWhenTheLoopCloses: accepts whose CQEs the loop holds (a Once
// runs 32 completions, and 40 came) when Loop.Close runs get no callback, and the connections
// they accepted are closed: no fd is left.
func TestRequestHeldAcceptsAreClosedWhenTheLoopCloses(t *testing.T) {
	const n = 40
	ln, sa := testutil.Listener(t) // backlog 64
	for range n {
		testutil.Dial(t, sa)
	}
	before := len(testutil.OpenFds(t))
	l, err := ringev.New(ringev.WithBackend("uring"))
	requireNew(t, "uring", err)
	var got []int
	cb := func(c *ringev.Completion) {
		if c.Err == nil {
			got = append(got, c.N)
		}
	}
	for i := range n {
		if _, err := l.Accept(ln, unix.SOCK_CLOEXEC, cb, uint64(i)); err != nil {
			l.Close()
			t.Fatal(err)
		}
	}
	l.AddTimer(time.Second, func(*ringev.Timer) {})
	for i := 0; len(got) == 0; i++ {
		if i == 100 {
			l.Close()
			t.Fatal("no accept completed in 100 Onces")
		}
		if err := l.Once(); err != nil {
			l.Close()
			t.Fatal(err)
		}
	}
	held := ringev.HeldCQEs(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, fd := range got {
		unix.Close(fd)
	}
	if held == 0 {
		t.Skipf("all %d accepts ran in one Once: none was held at Close", len(got))
	}
	if after := len(testutil.OpenFds(t)); after != before {
		t.Fatalf("%d fds open after Close with %d accepts held, %d before the loop (%d connections handed to callbacks, closed)", after, held, before, len(got))
	}
}
