//go:build linux

package fileio

// PauseOwner holds r's owner (io_uring modes) at its current turn until resume is called, so
// that operations queued meanwhile stay in the callers' queue. It returns nil in ModeThreads.
func PauseOwner(r *Ring) (resume func()) {
	if r.uring == nil {
		return nil
	}
	ch := make(chan struct{})
	r.uring.resume = ch
	o := getOp()
	o.kind = kindCtlPause
	_ = r.eng.control(o)
	putOp(o)
	return func() { close(ch) }
}

// QueuedCancels returns how many cancel requests wait for r's owner (io_uring modes; 0 in
// ModeThreads). Call it while the owner is held by PauseOwner.
func QueuedCancels(r *Ring) int {
	if r.uring == nil {
		return 0
	}
	n := 0
	for o := r.uring.cancels.head.Load(); o != nil; o = o.cnext {
		n++
	}
	return n
}

// OwnerAsleep reports whether r's owner (io_uring modes) has announced that it sleeps, so
// that the next caller to queue writes the eventfd; false in ModeThreads.
func OwnerAsleep(r *Ring) bool {
	return r.uring != nil && r.uring.sleeping.Load() == 1
}

// WakeOwner does what a caller does after pushing an operation (io_uring modes): if the owner
// announced that it sleeps, it claims the wake-up and writes the eventfd. Called without a
// push, it is the late half of a caller whose operation the owner took before that caller
// looked at the flag.
func WakeOwner(r *Ring) {
	if r.uring != nil {
		r.uring.wake()
	}
}
