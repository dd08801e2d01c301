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
