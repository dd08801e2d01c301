//go:build linux

package ringev_test

// Tests of the request records' size: what a request waiting in the kernel holds, as an idle
// connection's receive does for as long as the connection lives.

import (
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// maxRecordSize is the most l's request record may take: 128 bytes for the uring driver's (a
// size class of Go's allocator; an idle connection's multishot recv holds one), 136 for the
// emulation's (in the 144-byte class).
func maxRecordSize(l *ringev.Loop) int {
	if ringev.RequestRecordsRing(l) {
		return 128
	}
	return 136
}

// TestRequestRecordFitsInItsSizeClass: a pending Recv's record, on every backend, is at most
// maxRecordSize bytes: the fields few requests use (a deadline's timer, Connect's address,
// SubmitSQE's SQE) are not in it, nor is a Completion (the loop keeps one for every callback).
func TestRequestRecordFitsInItsSizeClass(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var rd recorder
		h := must(t)(l.Recv(a, make([]byte, 8), 0, rd.cb, 1))
		if n, most := ringev.RequestRecordSize(l), maxRecordSize(l); n > most {
			t.Errorf("a request record takes %d bytes, want at most %d", n, most)
		}
		if ringev.RequestHoldsRare(h) {
			t.Error("a pending Recv without a deadline holds a rare part")
		}
		h.Cancel()
		until(t, l, func() bool { return rd.n() > 0 })
	})
}

// TestRequestRarePartGoesBackWithTheRecord: SetTimeout gives a request its rare part (the
// deadline's timer); when the request ends the part goes back to the pool's spares, and the
// next request's deadline takes that one again, so that the records of requests without a
// deadline hold none.
func TestRequestRarePartGoesBackWithTheRecord(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var rd recorder
		h := must(t)(l.Recv(a, make([]byte, 8), 0, rd.cb, 1))
		if err := h.SetTimeout(time.Hour); err != nil {
			t.Fatal(err)
		}
		if !ringev.RequestHoldsRare(h) {
			t.Fatal("a Recv with a deadline holds no rare part")
		}
		h.Cancel()
		until(t, l, func() bool { return rd.n() > 0 })
		if n := ringev.RareSpares(l); n != 1 {
			t.Fatalf("%d spare rare parts once the request ended, want 1", n)
		}
		h = must(t)(l.Recv(a, make([]byte, 8), 0, rd.cb, 2))
		if ringev.RequestHoldsRare(h) {
			t.Fatal("a new Recv without a deadline holds a rare part")
		}
		if err := h.SetTimeout(time.Hour); err != nil {
			t.Fatal(err)
		}
		if n := ringev.RareSpares(l); !ringev.RequestHoldsRare(h) || n != 0 {
			t.Fatalf("after SetTimeout: holds a rare part %v, spares %d; want true, 0", ringev.RequestHoldsRare(h), n)
		}
		h.Cancel()
		until(t, l, func() bool { return rd.n() > 1 })
	})
}

// TestRequestFdStateFitsIn8Bytes: the core's state per fd number, a table indexed by the
// number, holds 8 bytes per number: a waiting CloseFd and the fd's IOs, which few fds have,
// are kept outside it, and its flags share a word with its count of records.
func TestRequestFdStateFitsIn8Bytes(t *testing.T) {
	if n := ringev.FdStateSize(); n > 8 {
		t.Errorf("the state per fd number takes %d bytes, want at most 8", n)
	}
}

// TestRequestFdRarePartLeavesWithTheClose: a CloseFd of an fd with a request in flight and an
// IO gives the fd a rare part (the waiting CloseFd, the IO) while it waits; once the fd is
// closed and the IO freed, none is left, so that the connections a server closes leave nothing
// behind.
func TestRequestFdRarePartLeavesWithTheClose(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		a, _ := testutil.Socketpair(t)
		l := newLoop(t, backend)
		var rd recorder
		must(t)(l.Recv(a, make([]byte, 8), 0, rd.cb, 1))
		x, err := l.NewRead(a, make([]byte, 8), 0, func(*ringev.IO, int, error) {})
		if err != nil {
			t.Fatal(err)
		}
		if n := ringev.FdRareEntries(l); n != 1 {
			t.Fatalf("%d fds with a rare part after NewRead, want 1", n)
		}
		closed := false
		must(t)(l.CloseFd(a, func(*ringev.Completion) { closed = true }, 0))
		testutil.HandOver(t, a)
		untilFor(t, l, deadline, "CloseFd", func() bool { return closed && rd.n() > 0 })
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
		if n := ringev.FdRareEntries(l); n != 0 {
			t.Fatalf("%d fds with a rare part once the fd is closed and its IO freed, want 0", n)
		}
	})
}
