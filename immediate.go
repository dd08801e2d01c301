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
	im := &Immediate{loop: l, handler: h}
	l.imm.push(im)
	return im
}

// Schedule queues im again, after it ran or was cancelled, to run once on a coming Once as
// AddImmediate queued it (tevent_schedule_immediate with an immediate made once): a handler
// scheduled often keeps one Immediate instead of allocating one per AddImmediate. It returns
// false, adding nothing, when im is still queued, after Close, and from a goroutine other than
// the loop's owner.
func (im *Immediate) Schedule() bool {
	if im == nil || im.queued || !im.loop.owned() || im.loop.closed {
		return false
	}
	im.loop.imm.push(im)
	return true
}

// push appends im to the queue.
func (q *immList) push(im *Immediate) {
	im.queued, im.prev, im.next = true, q.tail, nil
	if q.tail != nil {
		q.tail.next = im
	} else {
		q.head = im
	}
	q.tail = im
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
