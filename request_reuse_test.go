//go:build linux

package ringev_test

// Tests of requests on an fd number that a new file took after a close(2): they reach the new
// file.

import (
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// regularFileAt opens a new regular file holding data at fd number num (just freed; moved there
// with dup3(2) if something else took it), owned by the test.
func regularFileAt(t *testing.T, num int, data []byte) int {
	t.Helper()
	fd, err := unix.Open(t.TempDir()+"/f", unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(fd, data, 0); err != nil {
		t.Fatal(err)
	}
	f := testutil.Own(t, fd)
	if fd != num {
		f = testutil.Renumber(t, f, num)
	}
	return f
}

// TestRequestOnNumberReusedByRegularFile: requests on a non-blocking pipe's read end complete;
// the end is closed with a plain close(2) (no request left, which the docs allow) and a regular
// file takes its number; a Read and a Write on the file then complete at once with its data,
// and a Read on a pipe that takes the number next waits for its data and gets it.
func TestRequestOnNumberReusedByRegularFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r, w := testutil.Pipe(t)
		l := newLoop(t, backend)
		var rd recorder
		must(t)(l.Read(r, make([]byte, 8), -1, rd.cb, 1))
		untilWaited(t, l) // the read waits on the pipe
		testutil.Write(t, w, []byte("pipe"))
		until(t, l, func() bool { return rd.n() > 0 })
		wantOne(t, &rd, 4)
		num := r
		testutil.Close(t, r)
		f := regularFileAt(t, num, []byte("file data"))
		var frd, fwr recorder
		buf := make([]byte, 9)
		must(t)(l.Read(f, buf, 0, frd.cb, 2))
		must(t)(l.Write(f, []byte("FILE"), 0, fwr.cb, 3))
		until(t, l, func() bool { return frd.n() > 0 && fwr.n() > 0 })
		wantOne(t, &frd, 9)
		wantOne(t, &fwr, 4)
		if string(buf) != "file data" && string(buf) != "FILE data" {
			t.Fatalf("read %q from the regular file", buf)
		}
		testutil.Close(t, f)
		r2, w2, _ := testutil.PipeAt(t, num)
		var rd2 recorder
		must(t)(l.Read(r2, make([]byte, 8), -1, rd2.cb, 4))
		settle(t, l, 10*time.Millisecond, 3)
		if rd2.n() != 0 {
			t.Fatalf("a read on an empty pipe completed: N %d err %v", rd2.got[0].N, rd2.got[0].Err)
		}
		testutil.Write(t, w2, []byte("again"))
		until(t, l, func() bool { return rd2.n() > 0 })
		wantOne(t, &rd2, 5)
	})
}

// TestRequestOnNumberReusedInsideAnotherFdsCallback: an fd number closed with close(2) (no
// request left) and taken by a new pipe inside the callback of another fd's request, as a
// server's accept callback gets a number a connection just gave up, gets its request there: the
// emulation renews the idle fd's kept epoll registration for a request made outside the fd's
// own callbacks.
func TestRequestOnNumberReusedInsideAnotherFdsCallback(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		r1, w1 := testutil.Pipe(t)
		r2, w2 := testutil.Pipe(t)
		l := newLoop(t, backend)
		var first, other, reused recorder
		must(t)(l.Read(r1, make([]byte, 1), -1, first.cb, 1))
		if _, err := unix.Write(w1, []byte("a")); err != nil {
			t.Fatal(err)
		}
		until(t, l, func() bool { return first.n() > 0 }) // r1 idle now, its registration kept
		num := r1
		var nr, nw int
		must(t)(l.Read(r2, make([]byte, 1), -1, func(c *ringev.Completion) {
			other.cb(c)
			testutil.Close(t, r1)
			nr, nw, _ = testutil.PipeAt(t, num)
			if _, err := unix.Write(nw, []byte("b")); err != nil {
				t.Error(err)
			}
			if _, err := l.Read(nr, make([]byte, 1), -1, reused.cb, 3); err != nil {
				t.Error(err)
			}
		}, 2))
		if _, err := unix.Write(w2, []byte("x")); err != nil {
			t.Fatal(err)
		}
		untilFor(t, l, 2*time.Second, "the read on the reused number", func() bool { return reused.n() > 0 })
		if c := reused.last(t); c.Err != nil || c.N != 1 || string(c.Buf) != "b" {
			t.Fatalf("read on the reused number %d: N %d err %v buf %q, want the new pipe's byte", num, c.N, c.Err, c.Buf)
		}
	})
}
