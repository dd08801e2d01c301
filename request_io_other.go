//go:build unix && !linux

package ringev

// Submit (backend_uring_req_io_linux.go on Linux) hands the IO's operation to the loop, which the emulation makes with readiness and
// non-blocking syscalls. The callback runs once for it. Errors (nothing is submitted):
// ErrNotOwner, ErrClosed, ErrIOPending while the last submission has not completed,
// ErrIOFreed, ErrFdClosing while a CloseFd closes the fd, and one wrapping unix.EBADF once a
// CloseFd has closed it (the number may be another file's by now).
func (x *IO) Submit() error {
	l := x.l
	if !l.owned() {
		return ErrNotOwner
	}
	r, rq := x.rec, l.req
	if r.state != stFree || r.ioOwn != rq.ownSeq { // (ioOwn is 0 once a CloseFd closed the fd)
		return x.refused()
	}
	rq.live++
	r.state = stQueued
	rq.drv.start(r)
	return nil
}

// prepIO prepares the backend's state of an IO's record just made or given a new buffer: none
// here (the emulation reads the record).
func (rq *requests) prepIO(*reqRec) {}

// fixIO writes an IO's registered-file state into its prepared SQE: none here.
func (rq *requests) fixIO(*reqRec) {}

// ringReqs is the uring backend's request driver, which only Linux has (Loop.rt is nil).
type ringReqs struct{ turnErr error }

// turn is the uring driver's request turn (Once): never taken here.
func (d *ringReqs) turn(*Loop) turnEnd { return turnNone }
