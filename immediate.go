package ringev

// Immediate is a handler that runs on the next Once, before timers and fd events, in the order
// immediates were added (tevent's immediate events).
type Immediate struct {
	loop       *Loop
	prev, next *Immediate
	queued     bool
	handler    func()
}

// immList is an intrusive FIFO of immediates.
type immList struct{ head, tail *Immediate }

// AddImmediate queues h to run once, on a coming Once, before any timer or fd handler. It returns
// nil (and adds nothing) for a nil h, after Close, and from a goroutine other than the loop's
// owner.
func (l *Loop) AddImmediate(h func()) *Immediate {
	if !l.owned() || l.closed || h == nil {
		return nil
	}
	im := &Immediate{loop: l, handler: h, queued: true, prev: l.imm.tail}
	if l.imm.tail != nil {
		l.imm.tail.next = im
	} else {
		l.imm.head = im
	}
	l.imm.tail = im
	return im
}

// Cancel removes the immediate. It returns true if it had not run yet; false if it had, or when
// called from a goroutine other than the loop's owner.
func (im *Immediate) Cancel() bool {
	if im == nil || !im.queued || !im.loop.owned() {
		return false
	}
	im.loop.imm.unlink(im)
	return true
}

func (q *immList) unlink(im *Immediate) {
	if im.prev != nil {
		im.prev.next = im.next
	} else {
		q.head = im.next
	}
	if im.next != nil {
		im.next.prev = im.prev
	} else {
		q.tail = im.prev
	}
	im.prev, im.next, im.queued = nil, nil, false
}

// runImmediate runs the first immediate (the caller checked there is one).
func (l *Loop) runImmediate() {
	im := l.imm.head
	l.imm.unlink(im)
	l.call(im.handler)
}
