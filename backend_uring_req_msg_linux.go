package ringev

// PostTo's wake-up through the ring (crossloop_uring_linux.go): an IORING_OP_MSG_RING SQE
// (Linux 5.18) made as a request of the sending loop, whose completion falls back to the
// receiver's eventfd on an error. The loop calls it through ringWake, which this file sets.

func init() { ringWake = msgWake }

// msgWake wakes dst (which PostTo found sleeping, under dst.postMu) with a MSG_RING SQE in l's
// ring; false when it cannot (a backend other than uring on either side, no MSG_RING).
func msgWake(l, dst *Loop) bool {
	b, ok := l.be.(*uringBackend)
	if !ok {
		return false
	}
	d, ok := dst.be.(*uringBackend)
	if !ok || !b.msgRing() {
		return false
	}
	m := &b.msg
	tok := -1
	for i, x := range m.dsts {
		if x == dst {
			tok = i
			break
		}
	}
	if tok < 0 {
		tok = len(m.dsts)
		m.dsts = append(m.dsts, dst)
	}
	rq := l.reqs()
	r := rq.take(OpSQE, 0, nil, msgDone, uint64(tok))
	r.noFd = true
	r.rareOf().drv.sqe.PrepMsgRing(d.ring.Fd(), 0, uringWakeTag, 0, 0)
	rq.submit(r)
	return true
}

// msgDone is the completion of a MSG_RING wake-up: on an error, the receiver (still open) is
// woken through its eventfd.
func msgDone(c *Completion) {
	if c.Err == nil {
		return
	}
	m := &c.Request.rec.rq.l.be.(*uringBackend).msg
	if int(c.Token) >= len(m.dsts) {
		return
	}
	dst := m.dsts[c.Token]
	dst.postMu.Lock()
	if !dst.closed {
		writeWake(dst.wakeFd)
	}
	dst.postMu.Unlock()
}
