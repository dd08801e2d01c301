//go:build unix

package ringev

import "sync/atomic"

// Immediate is a handler that runs on the next Once, before timers and fd events, in the order
// immediates were added (tevent's immediate events).
type Immediate struct {
	loop       *Loop
	prev, next *Immediate
	linked     bool          // in the loop's queue (the owner's)
	state      atomic.Uint32 // immQueued or immIdle: Schedule, Cancel and the run decide by it
	handler    func()
}

// An Immediate's state. Queued is the zero value: AddImmediate makes it queued without an
// atomic store. The queue (linked) follows the state on the loop's goroutine.
const (
	immQueued = iota
	immIdle
)

// immList is an intrusive FIFO of immediates.
type immList struct{ head, tail *Immediate }

// AddImmediate queues h to run once, on a coming Once, before any timer or fd handler. It is
// safe from any goroutine: from one that does not own the loop it queues the immediate through
// the loop, as Post does, and returns its handle at once. It returns nil, adding nothing, for a
// nil h and after Close.
func (l *Loop) AddImmediate(h func()) *Immediate {
	if h == nil {
		return nil
	}
	if !l.owned() {
		im := &Immediate{loop: l, handler: h}
		if l.Post(func() { l.syncImmediate(im) }) != nil {
			return nil
		}
		return im
	}
	if l.closed {
		return nil
	}
	im := &Immediate{loop: l, handler: h}
	l.imm.push(im)
	return im
}

// Schedule queues im again, after it ran or was cancelled, to run once on a coming Once as
// AddImmediate queued it (tevent_schedule_immediate with an immediate made once): a handler
// scheduled often keeps one Immediate instead of allocating one per AddImmediate. It returns
// false, adding nothing, when im is still queued and after Close. It is safe from any
// goroutine: from one that does not own the loop the queueing is posted to the loop.
func (im *Immediate) Schedule() bool {
	if im == nil {
		return false
	}
	l := im.loop
	if !l.owned() {
		if !im.state.CompareAndSwap(immIdle, immQueued) {
			return false
		}
		if l.Post(func() { l.syncImmediate(im) }) != nil {
			im.state.CompareAndSwap(immQueued, immIdle)
			return false
		}
		return true
	}
	if l.closed || !im.state.CompareAndSwap(immIdle, immQueued) {
		return false
	}
	if !im.linked { // still linked: cancelled from another goroutine, not yet unlinked
		l.imm.push(im)
	}
	return true
}

// push appends im to the queue.
func (q *immList) push(im *Immediate) {
	im.linked, im.prev, im.next = true, q.tail, nil
	if q.tail != nil {
		q.tail.next = im
	} else {
		q.head = im
	}
	q.tail = im
}

// Cancel removes the immediate. It returns true if it had not run yet (its handler will not
// run), false if it had run or was cancelled. It is safe from any goroutine: from one that does
// not own the loop the removal from the loop's queue is posted to the loop, but the handler does
// not run after Cancel returned true.
func (im *Immediate) Cancel() bool {
	if im == nil || !im.state.CompareAndSwap(immQueued, immIdle) {
		return false
	}
	l := im.loop
	if !l.owned() {
		l.Post(func() { l.syncImmediate(im) }) // ErrClosed: a closed loop runs no immediate
		return true
	}
	if im.linked {
		l.imm.unlink(im)
	}
	return true
}

// syncImmediate makes the queue follow im's state after a call from another goroutine.
func (l *Loop) syncImmediate(im *Immediate) {
	queued := im.state.Load() == immQueued
	switch {
	case queued && !im.linked && !l.closed:
		l.imm.push(im)
	case !queued && im.linked:
		l.imm.unlink(im)
	}
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
	im.prev, im.next, im.linked = nil, nil, false
}

// runImmediate runs the first immediate (the caller checked there is one), unless it was
// cancelled from another goroutine and is still linked.
func (l *Loop) runImmediate() {
	im := l.imm.head
	l.imm.unlink(im)
	if im.state.CompareAndSwap(immQueued, immIdle) {
		l.call(im.handler)
	}
}
