//go:build unix

package ringev

// What a backend does for requests: the reqDriver contract.

import (
	"time"
)

// reqDriver is what a backend does for requests, and all it does: the core says "queue this
// request", "cancel it", "cancel every request on this fd", "run a batch of callbacks"; the
// driver tells the core what completed (requests.complete for a multishot's intermediate
// completions, requests.opDone for the last one), during the backend's wait or, for the
// emulation, from its fd events, and runs the batch (reqDriving.runBatch): the queued completions through the
// core (requests.runOne), and on uring a one-shot request's CQE from the ring to its callback.
// The core never sees an SQE.
type reqDriver interface {
	reqDriving // what the loop asks of it (reqseam.go)
	// newRec makes a record: a zero reqRec that is the first field of the backend's own
	// record type, so that the backend reaches its state for the record from *reqRec at no
	// cost. Every record of the loop is made here.
	newRec() *reqRec
	// rw makes a read, write, recv or send request on fd that passed fastOK (arg: the file
	// offset, -1 for the file position, or the msg flags) and hands it to the backend: take,
	// then start, in one call.
	rw(op Op, fd int, buf []byte, arg int64, cb Callback, token uint64) Request
	// start hands r (state stQueued) to the backend; it goes to the kernel at the loop's next
	// wait at the latest.
	start(r *reqRec)
	// cancel asks the backend to cancel r; its last completion follows (with ECANCELED, or
	// with the result if the operation won).
	cancel(r *reqRec)
	// cancelFd cancels every request on fd, as cancel does each.
	cancelFd(fd int32)
	// retime moves the deadline of r that the backend enforces itself (uring: a LINK_TIMEOUT
	// in the kernel, or one it makes when it submits r) to after from now (<= 0: none) and
	// reports true, or reports false when the backend enforces none for r (the loop's timer
	// does).
	retime(r *reqRec, after time.Duration) bool
	// check returns nil when the backend can run op here, else an error that names the
	// kernel feature op needs (wrapping unix.EOPNOTSUPP); the emulation runs every op but
	// OpSQE (which SubmitSQE refuses itself).
	check(op Op) error
	// newGroup makes a buffer group of n buffers of size bytes with ID bgid: a BufferGroup that
	// is the first field of the backend's own group type (as newRec), filled in by
	// Loop.initGroup, with the backend's side set up.
	newGroup(bgid uint16, n, size int) (*BufferGroup, error)
	// provide gives buffer bid of g back to the kernel's side.
	provide(g *BufferGroup, bid int)
	// closeGroup releases the backend's side of g.
	closeGroup(g *BufferGroup) error
	// shutdown cancels every request before the backend closes; their callbacks do not run.
	shutdown()
	// fixFile puts fd's file in the backend's registered-file table at slot fd (on) or
	// empties the slot (first submitting what is prepared when live: requests on fd are not
	// all done), and reports whether requests on fd are to use the slot; the emulation has no
	// table (false, nil).
	fixFile(fd int32, on, live bool) (bool, error)
}
