package ringev_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
)

// The breaker's tests of the uring-poll multishot wait (a Write event on a socket whose peer
// half-closed it waits with IORING_POLL_ADD_MULTI) and of the requests emulation's hangup
// flag. Each runs on every backend; every wait has a deadline.

// halfClosedFull returns a socketpair whose first end's send queue is full and whose peer has
// shut down its writing side: a Write event on a waits (on uring-poll with a multishot poll).
func halfClosedFull(t *testing.T) (a, peer *ownedFd) {
	t.Helper()
	a, peer = ownedSocketpair(t)
	fill(t, a.fd)
	if err := unix.Shutdown(peer.fd, unix.SHUT_WR); err != nil {
		t.Fatalf("shutdown(SHUT_WR): %v", err)
	}
	return a, peer
}

// TestCloseRightAfterSetFlagsReleasesFile: an fd event whose flags changed (its old poll's
// removal queued, the new poll not yet armed) and that is then closed with auto-close before any
// Once releases the file at once: the peer reads EOF within 100 ms. Once with a one-shot poll
// armed (Read on an idle socket, changed to Error), once with a multishot one (Write on a
// half-closed full socket, changed to Read|Write). On uring-poll the removal of the old poll
// stayed in the SQ: Close submitted only when a poll was armed, so the file stayed pinned.
func TestCloseRightAfterSetFlagsReleasesFile(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		for _, c := range []struct {
			name     string
			half     bool
			from, to ringev.Flags
		}{
			{"OneShot", false, ringev.Read, ringev.Error},
			{"Multishot", true, ringev.Write, ringev.Read | ringev.Write},
		} {
			t.Run(c.name, func(t *testing.T) {
				var a, peer *ownedFd
				if c.half {
					a, peer = halfClosedFull(t)
				} else {
					a, peer = ownedSocketpair(t)
				}
				l := newLoop(t, backend)
				ev := addFd(t, l, a.fd, c.from, never(t, "waiting event"))
				settle(t, l, 20*time.Millisecond, 3) // the loop has waited on a
				setFlags(t, ev, c.to)
				ev.SetAutoClose(true)
				a.HandOver()
				if err := ev.Close(); err != nil {
					t.Fatalf("FdEvent.Close: %v", err)
				}
				expectEOF(t, peer.fd, releaseWithin, "auto-close right after SetFlags")
			})
		}
	})
}
