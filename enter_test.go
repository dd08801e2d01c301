//go:build linux

package ringev_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRequestsCompletingAtOnceNeedNoWaitingEnter: on uring, a loop whose requests complete in
// the enter that submits them (a write, then the read it feeds) collects them with an enter
// that does not wait, so the runtime's syscall bookkeeping (and the monitor's taking the P away
// from a syscall) stays out of its busy path: almost none of its waits block.
func TestRequestsCompletingAtOnceNeedNoWaitingEnter(t *testing.T) {
	l, err := ringev.New(ringev.WithBackend("uring"))
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("io_uring is not available here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, w := testutil.Pipe(t)
	const rounds = 1000
	wbuf, rbuf := []byte{'x'}, make([]byte, 1)
	done, failed := 0, error(nil)
	var cb ringev.Callback
	cb = func(c *ringev.Completion) {
		if c.Err != nil && failed == nil {
			failed = c.Err
		}
		if c.Op != ringev.OpRead {
			return
		}
		if done++; done < rounds {
			enterRound(t, l, w, r, wbuf, rbuf, cb)
		}
	}
	enterRound(t, l, w, r, wbuf, rbuf, cb)
	testutil.OnceUntil(t, l, func() bool { return done >= rounds || failed != nil }, 10*time.Second)
	if failed != nil {
		t.Fatal(failed)
	}
	waits, blocked := ringev.Waits(l), ringev.BlockingEnters(l)
	t.Logf("%d rounds: %d waits, %d waiting enters", rounds, waits, blocked)
	if blocked > rounds/10 {
		t.Fatalf("%d of %d waits blocked in a waiting io_uring_enter, want at most %d", blocked, waits, rounds/10)
	}
}

// enterRound queues a write of wbuf to w and then a read of r into rbuf, both completing with cb.
func enterRound(t *testing.T, l *ringev.Loop, w, r int, wbuf, rbuf []byte, cb ringev.Callback) {
	if _, err := l.Write(w, wbuf, -1, cb, 0); err != nil {
		t.Error(err)
	}
	if _, err := l.Read(r, rbuf, -1, cb, 0); err != nil {
		t.Error(err)
	}
}
