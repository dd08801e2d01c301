//go:build unix

package ringev

// What the loop knows of the requests layer, and all it knows. The requests (request*.go and
// backend_uring_req_*_linux.go) are built on the loop: they call its code and read its state.
// The loop calls them only through what this file declares, which the requests layer fills in
// when the loop's first request is made (Loop.reqs): reqShared, the requests' state that Once
// reads on its busy path without a call; reqDriving, what it asks of the requests' driver (a
// batch of completions, the wait's question, the uring driver's request turn); reqLayer, what
// it asks of the requests' core, rarely. layering_test.go fails on
// any other use of the request files by the loop's; docs/design.md ("Requests are built on the
// loop") says why, and what it costs.

// reqShared is the part of the requests' state that the loop reads without a call (and writes,
// for ownSeq): the first field of the requests layer's state (requests), at which Loop.rs points.
type reqShared struct {
	live   int // requests made and not ended: the loop has something to wait for
	held   int // completions the uring driver holds in its ring for their callbacks
	queued int // completions queued for their callbacks (the requests' cq, from its head)
	// seen and seenWait are l.dispatch and l.waitSeq at the last completion batch: completions
	// and fd handlers take turns (runTurn).
	seen, seenWait uint64
	// ownSeq counts from 1 the loop's own fds made since the requests' state was (see
	// reqFd.okSeq, markInternal); Loop.Close sets it to closedSeq, which no reqFd.okSeq holds,
	// so that no request takes the fast way.
	ownSeq uint32
	// cbFd is the fd of the request whose callback is running, -1 for none; cbRec is 1 + the
	// index of the record whose last callback is running, 0 for none. The loop clears them
	// when a batch ends (endTurn), also when a callback panicked out of it.
	cbFd    int32
	cbRec   uint32
	turnErr error // the error of the last request turn that ended turnReaped (Once takes it)
}

// pending reports whether completions wait for their callbacks (queued, or CQEs the uring
// driver holds).
func (s *reqShared) pending() bool { return s.held > 0 || s.queued > 0 }

// reqDriving is what the loop asks of the requests' driver (ringReqs on uring, emulReqs on the
// other backends), per batch of completions or per Once.
type reqDriving interface {
	// runBatch runs up to n completions' callbacks, in the order the loop learned of them, and
	// reports whether it ran one: runTurn's batch, with the nesting guard set.
	runBatch(n int) bool
	// needWait reports whether the backend must enter its wait (not only look at the fds):
	// requests to submit, or completions to collect.
	needWait() bool
	// turn is the uring driver's request turn (ringReqs.turn): Once's turn on a loop with no
	// fd event and no completion waiting for its callback, before its wait. Once asks only
	// Loop.turner, which is nil on the other backends.
	turn(l *Loop) turnEnd
}

// reqLayer is what the loop asks of the requests' core (its value is the requests' state),
// rarely.
type reqLayer interface {
	// putBack puts the record of a last callback that panicked (reqShared.cbRec) back in the
	// pool, when the batch ends.
	putBack()
	// shutdown is Loop.Close's, before the backend closes: every request is cancelled, and no
	// callback runs.
	shutdown()
	// fdClosing returns ErrFdClosing when a CloseFd of fd waits for fd's requests to end (AddFd
	// refuses fd meanwhile: the event would watch a number about to be closed), else nil.
	fdClosing(fd int) error
	// unfix is told that the loop is about to close fd itself (an fd event's auto-close): fd
	// leaves the ring's registered-file table if it is there (RegisterFile). The error names fd.
	unfix(fd int) error
}

// turnEnd is what Once's request turn did (reqDriving.turn).
type turnEnd uint8

const (
	turnNone   turnEnd = iota // nothing: Once waits as usual
	turnRan                   // it ran a batch of callbacks, Once's handler: Once returns
	turnReaped                // it found CQEs it does not serve: they were read as a wait reads them
)

// reqBatch bounds a batch of completions: one Once runs at most reqBatch of them.
const reqBatch = 32
