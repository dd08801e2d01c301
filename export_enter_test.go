//go:build linux

package ringev

// BlockingEnters returns how many waiting io_uring_enter(2) calls l's uring backend made in its
// waits (0 on another backend).
func BlockingEnters(l *Loop) uint64 {
	if b, ok := l.be.(*uringBackend); ok {
		return b.blocking
	}
	return 0
}

// RequestLinked reports whether the request h names carries its deadline as an
// IORING_OP_LINK_TIMEOUT (uring), not as a loop timer.
func RequestLinked(h Request) bool {
	r := h.live()
	return r != nil && r.rq.ring() && ringOf(r).link
}

// TimersPending returns how many timers l holds (the loop's own, a request's deadline
// timer included).
func TimersPending(l *Loop) int { return len(l.timers) }

// BatchingWaits returns how many blocking waits of l's uring backend used WithBatchWait's
// min_wait (0 on another backend).
func BatchingWaits(l *Loop) uint64 {
	if b, ok := l.be.(*uringBackend); ok {
		return b.batched
	}
	return 0
}
