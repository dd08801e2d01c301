//go:build linux

package ringev_test

// Tests of requests on an fd opened for the other direction.

import (
	"errors"
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRequestReadOnAPipesWriteEndFailsWithEBADF: a Read on a pipe's write end completes with
// EBADF on every backend (read(2)'s answer, and io_uring's), whether or not the loop has written
// to that end before; the emulation must not wait for a readiness that never comes.
func TestRequestReadOnAPipesWriteEndFailsWithEBADF(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, wroteFirst := range []bool{false, true} {
			_, w := testutil.Pipe(t)
			l := newLoop(t, backend)
			if wroteFirst {
				var wrec recorder
				must(t)(l.Write(w, []byte("x"), -1, wrec.cb, 1))
				until(t, l, func() bool { return wrec.n() > 0 })
			}
			var rec recorder
			must(t)(l.Read(w, make([]byte, 8), -1, rec.cb, 2))
			until(t, l, func() bool { return rec.n() > 0 })
			if c := rec.last(t); !errors.Is(c.Err, unix.EBADF) || c.N != 0 {
				t.Fatalf("wrote first %v: completion %+v, want EBADF", wroteFirst, c)
			}
		}
	})
}
