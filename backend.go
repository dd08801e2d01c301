//go:build unix

package ringev

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// backend is what a backend does, and all it does, in the model of tevent's struct tevent_ops:
// watch fds for poll(2) events, and wait until one is ready or a deadline passes. Timers,
// immediates, signals, posted functions, fairness and the dispatch order live in the core
// (loop.go); a new backend is one file that implements this interface and registers itself in
// backendTable.
//
// Interest masks are poll(2) bits (unix.POLLIN, unix.POLLOUT, unix.POLLERR); POLLERR alone
// means "watch for error and hang-up only". A mask of 0 means "not watched".
//
// All methods are called from the loop's goroutine only.
type backend interface {
	// setInterest changes what fd is watched for from old to new (both poll bits; 0 = not
	// watched). The core calls it only when the union of the fd's handlers changes. gen is the
	// registration's generation, which the epoll-set backends store in the event's data beside
	// the fd (readyFd.Pad) so that the core recognises an event of a registration it replaced
	// or removed; the others ignore it (the core passes 0). Removing a registration the kernel
	// no longer has (the fd closed, or its number now naming another file) fails with an error
	// wrapping unix.EBADF or unix.ENOENT.
	setInterest(fd int32, gen, old, new uint32) error
	// wait blocks until at least one watched fd is ready or timeout ns have passed
	// (timeout < 0: no deadline; 0: do not block) and appends what is ready to buf. A timeout,
	// and an interruption by a signal (EINTR), return buf unchanged and a nil error: the core
	// recomputes its deadline and calls again, so a timeout is waited for once, never twice.
	// The same fd may appear at most once per call.
	wait(timeout int64, buf []readyFd) ([]readyFd, error)
	// stillWatched reports whether the kernel still holds fd's registration with interest for
	// the file the fd number names now (false: that file was closed and the number reused).
	// Backends that watch by fd number (poll, uring-poll) cannot tell and report true.
	stillWatched(fd int32, gen, interest uint32) bool
	// close releases the backend's kernel objects. Idempotent.
	close() error
}

// lateYielder is implemented by a backend whose wait may serve a blocking call without
// blocking (the uring backend first enters its ring without waiting when requests are in the
// kernel): the core hands it the loop's yieldBeforeBlock, which it runs only just before a
// call that may block, instead of the core running it before every wait that may block. The
// yield is for the blocking call (a syscall the runtime's monitor sees); the clock read it
// costs is then not paid by a wait that the look serves (figures: docs/design.md).
type lateYielder interface {
	yieldLate(yield func())
}

// epollSetBackend is implemented by the backends whose fds live in an epoll set (epoll, and
// uring, which embeds it). The core's busy path reads that set itself with epollLook (once.go),
// as their wait(0) would, so that the hot path touches neither the backend's code nor its data.
type epollSetBackend interface {
	epollSet() int
	// replaceSet makes the set's fd number name a new, empty epoll set; the old set goes with
	// every registration in it, including those the core can no longer remove (an fd closed
	// with close(2) while a dup keeps its file open). A wait in flight on the old set is
	// cancelled. The core then adds its fds again (rebuildEpollSet).
	replaceSet() error
}

// backendInfo names a backend and opens it.
type backendInfo struct {
	name string
	// auto: "auto" may choose it. Backends that cannot keep the whole contract (uring-poll is
	// not close-safe) are only used when asked for by name.
	auto bool
	// open creates the backend's kernel objects; the error says why it cannot be used here.
	open func() (backend, error)
}

// backendTable lists the backends in the order "auto" prefers them.
var backendTable = []backendInfo{
	{"uring", true, openUring},
	{"epoll", true, openEpoll},
	{"poll", true, openPoll},
	{"uring-poll", false, openUringPoll},
}

// Backends returns the names of the registered backends: first those "auto" tries, in its order
// ("uring", "epoll", "poll"), then those used only when asked for by name ("uring-poll": one-shot
// IORING_OP_POLL_ADD per fd, faster but not close-safe; see WithBackend). A name in this list may
// still fail in New on a kernel that lacks what it needs; New's error then says why.
func Backends() []string {
	names := make([]string, len(backendTable))
	for i, b := range backendTable {
		names[i] = b.name
	}
	return names
}

// ErrUnknownBackend is returned (wrapped, with the name) by New for a backend name that is not
// "auto" or one of Backends().
var ErrUnknownBackend = errors.New("ringev: unknown backend")

// openBackend opens the backend called name ("auto" tries every backend in order). It returns
// the backend, its name, and for "auto" the reason for the choice.
func openBackend(name string) (backend, string, string, error) {
	if name == "" || name == "auto" {
		var why []string
		for _, bi := range backendTable {
			if !bi.auto {
				continue
			}
			be, err := bi.open()
			if err == nil {
				reason := "auto: " + bi.name + " is the first backend that works here"
				if len(why) > 0 {
					reason = "auto: chose " + bi.name + " because " + strings.Join(why, "; ")
				}
				return be, bi.name, reason, nil
			}
			why = append(why, err.Error())
		}
		return nil, "", "", fmt.Errorf("ringev: no backend works here: %s", strings.Join(why, "; "))
	}
	for _, bi := range backendTable {
		if bi.name == name {
			be, err := bi.open()
			if err != nil {
				return nil, "", "", err
			}
			return be, bi.name, "", nil
		}
	}
	return nil, "", "", fmt.Errorf("%w %q (known: auto, %s)", ErrUnknownBackend, name, strings.Join(Backends(), ", "))
}

// pollBits is the poll(2) interest for a set of fd event flags. Error alone watches POLLERR,
// which every backend treats as "errors and hang-up only". Read and Error also ask for POLLRDHUP
// (Linux 2.6.17: the peer shut down its writing side), as tevent does for TEVENT_FD_READ and
// TEVENT_FD_ERROR, so that a half-close is reported as Error.
func pollBits(f Flags) uint32 {
	var m uint32
	if f&Read != 0 {
		m |= unix.POLLIN | pollRdHup
	}
	if f&Write != 0 {
		m |= unix.POLLOUT
	}
	if f&Error != 0 {
		m |= unix.POLLERR | pollRdHup
	}
	if f&hangup != 0 {
		m |= unix.POLLERR
	}
	return m
}
