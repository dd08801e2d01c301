//go:build unix

package ringev

import (
	"math"
	"sync/atomic"
	"time"
)

// now is the loop's monotonic clock: the time in ns since the loop was created, which timers'
// and requests' deadlines are on.
func (l *Loop) now() int64 { return int64(time.Since(l.epoch)) }

// Timer is a one-shot timer on the loop's monotonic clock.
type Timer struct {
	loop     *Loop
	deadline int64  // ns since the loop's epoch (monotonic)
	seq      uint64 // creation order, for ties
	index    int    // position in the heap; -1 when not queued (the owner's)
	handler  func(t *Timer)
	// handle: made by AddTimer or AddTimerAt, so Stop may come from any goroutine and state
	// decides between it and the run. The loop's own timers (request deadlines) have neither.
	handle bool
	state  atomic.Uint32 // timerPending, then timerDone once stopped or run
	// Data is free for the caller's use.
	Data any
}

// A Timer handle's state: pending until Stop or its run, whichever comes first, makes it done.
const (
	timerPending = iota
	timerDone
)

// AddTimer runs h once, d from now (monotonic clock; d <= 0 means due at once; a d beyond the
// clock's range, such as math.MaxInt64 for "never", saturates instead of wrapping). Timers run in
// deadline order, ties in the order the loop added them; a due timer runs after timers already
// due and before fd events. It is safe from any goroutine: from one that does not own the loop
// it queues the timer to the loop, as Post does, and returns its handle at once (d counts from
// the call). It returns nil, adding nothing, for a nil h and after Close.
func (l *Loop) AddTimer(d time.Duration, h func(t *Timer)) *Timer {
	if !l.owned() {
		return l.addTimerFrom(l.deadlineIn(d), h)
	}
	if l.closed || h == nil {
		return nil
	}
	return l.addTimer(l.deadlineIn(d), h)
}

// deadlineIn is the loop time (ns since its epoch) d from now, saturated: a d near
// math.MaxInt64 (a common "never") is the end of time, not a sum that wraps into the past.
func (l *Loop) deadlineIn(d time.Duration) int64 {
	now := l.now()
	switch {
	case d > 0 && int64(d) > math.MaxInt64-now:
		return math.MaxInt64
	case d < 0 && int64(d) < math.MinInt64+now:
		return math.MinInt64
	}
	return now + int64(d)
}

// AddTimerAt runs h once at deadline (compared on the monotonic clock when deadline carries a
// monotonic reading, as time.Now() values do). It is safe from any goroutine, as AddTimer is.
// It returns nil, adding nothing, for a nil h and after Close.
func (l *Loop) AddTimerAt(deadline time.Time, h func(t *Timer)) *Timer {
	if !l.owned() {
		return l.addTimerFrom(int64(deadline.Sub(l.epoch)), h)
	}
	if l.closed || h == nil {
		return nil
	}
	return l.addTimer(int64(deadline.Sub(l.epoch)), h)
}

func (l *Loop) addTimer(deadline int64, h func(t *Timer)) *Timer {
	l.timerSeq++
	t := &Timer{loop: l, deadline: deadline, seq: l.timerSeq, handler: h, handle: true}
	l.timers.push(t)
	return t
}

// addTimerFrom is AddTimer from a goroutine that does not own the loop: the loop adds the timer
// when it runs the posted insertion, unless Stop came first. nil for a nil h or a closed loop.
func (l *Loop) addTimerFrom(deadline int64, h func(t *Timer)) *Timer {
	if h == nil {
		return nil
	}
	t := &Timer{loop: l, deadline: deadline, index: -1, handler: h, handle: true}
	if l.Post(func() { l.insertTimer(t) }) != nil {
		return nil
	}
	return t
}

// insertTimer puts t, made by another goroutine, in the heap, unless it was stopped meanwhile.
func (l *Loop) insertTimer(t *Timer) {
	if t.state.Load() == timerPending && t.index < 0 {
		l.timerSeq++
		t.seq = l.timerSeq
		l.timers.push(t)
	}
}

// Stop cancels the timer. It returns true if the timer had not run yet (its handler will not
// run), false if it had already run or been stopped. It is safe from any goroutine: from one
// that does not own the loop the timer's removal from the loop's queue is posted to the loop,
// but the handler does not run after Stop returned true. Stop does not wait for a handler that
// is running.
func (t *Timer) Stop() bool {
	if t == nil || !t.state.CompareAndSwap(timerPending, timerDone) {
		return false
	}
	l := t.loop
	if l.owned() {
		if t.index >= 0 {
			l.timers.remove(t.index)
		}
		return true
	}
	l.Post(func() { // ErrClosed: a closed loop runs no timer
		if t.index >= 0 {
			l.timers.remove(t.index)
		}
	})
	return true
}

// Deadline returns when the timer is due. It is safe from any goroutine.
func (t *Timer) Deadline() time.Time { return t.loop.epoch.Add(time.Duration(t.deadline)) }

// runTimer pops the first timer (the caller checked it is due) and runs it.
func (l *Loop) runTimer() {
	t := l.timers[0]
	l.timers.remove(0)
	if t.handle && !t.state.CompareAndSwap(timerPending, timerDone) {
		return // stopped from another goroutine; the posted removal finds it gone
	}
	l.call(func() { t.handler(t) })
}

// timerHeap is a binary min-heap ordered by (deadline, seq).
type timerHeap []*Timer

func (h timerHeap) less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *timerHeap) push(t *Timer) {
	t.index = len(*h)
	*h = append(*h, t)
	h.up(t.index)
}

func (h *timerHeap) remove(i int) {
	old := *h
	n := len(old) - 1
	t := old[i]
	if i != n {
		old.swap(i, n)
	}
	old[n] = nil
	*h = old[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	t.index = -1
}

func (h timerHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h timerHeap) down(i0 int) bool {
	i := i0
	n := len(h)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
