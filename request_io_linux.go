package ringev

// startIO hands r, an IO's record that Submit counted on f (its fd's state), to the backend:
// on the uring backend its SQE is written at once (ringReqs.submitIO), else through the
// driver's start.
func (rq *requests) startIO(r *reqRec, f *reqFd) {
	if d, ok := rq.drv.(*ringReqs); ok {
		d.submitIO(r, f)
		return
	}
	r.state = stQueued
	rq.drv.start(r)
}
