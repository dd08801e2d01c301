//go:build unix && !linux

package ringev

// startIO hands r, an IO's record that Submit counted on f (its fd's state), to the backend.
func (rq *requests) startIO(r *reqRec, f *reqFd) {
	r.state = stQueued
	rq.drv.start(r)
}
