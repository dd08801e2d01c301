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
