//go:build unix

package nethttp

import (
	"sync"
	"time"
)

// workerIdle is how long a handler goroutine with nothing to run waits for a request before
// it ends: between workerIdle and twice that.
const workerIdle = time.Second

// maxIdleWorkers bounds the goroutines kept waiting for requests.
const maxIdleWorkers = 256

// workers runs the requests' handlers on goroutines that are kept between requests, so that a
// request does not pay for a new goroutine's stack to grow to a handler's depth (net/http
// keeps one goroutine per connection for that reason, and its stack).
//
// Requests wait in a queue. A goroutine whose handler has returned takes the next request
// itself, without waiting to be woken, so that a turn's requests cost one wake-up, not one
// each. So that a handler that blocks does not hold up the requests behind it, a request
// never waits in the queue without a goroutine woken for it that has not yet taken one
// (waking is never 0 while the queue holds requests): whoever leaves requests in the queue
// wakes one if none is.
//
// A waiting goroutine waits on its channel alone: one timer for the pool (reap), not one per
// request, ends those that have waited through a whole tick of it.
type workers struct {
	serve func(*exchange) // (*exchange).serve; a test's own

	mu      sync.Mutex
	serving int         // the requests queued or being served (run to the end of serve)
	ended   *sync.Cond  // on mu, signalled when serving falls to 0
	queue   []*exchange // the requests waiting, from queue[head]
	head    int
	waking  int       // goroutines woken (or started) that have not yet looked at the queue
	idle    []*worker // the longest waiting first
	gen     uint64    // reap's ticks
	reap    *time.Timer
	reapID  uint64 // reap's, told apart from a timer stopped (stop) as it fired

	// stopped is set by stop: a goroutine that ends its request after it (its handler's end
	// counted, Server.Wait returned) ends instead of waiting for another.
	stopped bool
}

type worker struct {
	ch  chan bool // true: look at the queue; false: end
	gen uint64    // the tick in which it began to wait
}

// run queues x, to be served by a goroutine kept, or a new one.
func (p *workers) run(x *exchange) {
	p.mu.Lock()
	if p.head > 0 && len(p.queue) == cap(p.queue) {
		// The queue is full, with room before its head: moved down rather than grown, so
		// that a queue that never empties does not grow for ever.
		n := copy(p.queue, p.queue[p.head:])
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
	p.queue = append(p.queue, x)
	p.serving++
	p.wakeLocked()
}

// wait waits until no request is queued or being served.
func (p *workers) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.serving > 0 {
		if p.ended == nil {
			p.ended = sync.NewCond(&p.mu)
		}
		p.ended.Wait()
	}
}

// wakeLocked wakes a goroutine for the queue's requests unless one is waking already, and
// unlocks p.mu.
func (p *workers) wakeLocked() {
	if p.waking > 0 {
		p.mu.Unlock()
		return
	}
	p.waking++
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.ch <- true // it waits: its channel is empty
		return
	}
	p.mu.Unlock()
	go p.work(&worker{ch: make(chan bool, 1)})
}

// take returns the queue's first request, nil if it is empty; p.mu is held.
func (p *workers) take() *exchange {
	if p.head == len(p.queue) {
		return nil
	}
	x := p.queue[p.head]
	p.queue[p.head] = nil
	p.head++
	if p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
	}
	return x
}

// work serves the queue's requests, then waits to be woken for more, until it is told to
// end. It has been woken (counted in waking).
func (p *workers) work(w *worker) {
	for {
		p.mu.Lock()
		p.waking--
		for {
			x := p.take()
			if x == nil {
				break
			}
			if p.head < len(p.queue) {
				p.wakeLocked() // the rest must not wait for x's handler
			} else {
				p.mu.Unlock()
			}
			p.serve(x)
			p.mu.Lock()
			if p.serving--; p.serving == 0 && p.ended != nil {
				p.ended.Broadcast()
			}
		}
		if p.stopped || len(p.idle) >= maxIdleWorkers {
			p.mu.Unlock()
			return
		}
		w.gen = p.gen
		p.idle = append(p.idle, w)
		if p.reap == nil {
			p.reapID++
			id := p.reapID
			p.reap = time.AfterFunc(workerIdle, func() { p.reapIdle(id) })
		}
		p.mu.Unlock()
		if !<-w.ch {
			return
		}
	}
}

// reapIdle is reap's tick: it stops the goroutines that have waited since before the last
// tick, and ticks again while some wait. id is the timer's (reapID): one stopped or replaced
// does nothing.
func (p *workers) reapIdle(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reap == nil || p.reapID != id {
		return
	}
	p.gen++
	n := 0
	for n < len(p.idle) && p.idle[n].gen+1 < p.gen {
		p.idle[n].ch <- false // it waits: its channel is empty
		n++
	}
	m := copy(p.idle, p.idle[n:])
	clear(p.idle[m:])
	p.idle = p.idle[:m]
	if m > 0 {
		p.reap.Reset(workerIdle)
	} else {
		p.reap = nil
	}
}

// stop ends the goroutines waiting for requests.
func (p *workers) stop() {
	p.mu.Lock()
	p.stopped = true
	idle := p.idle
	p.idle = nil
	if p.reap != nil {
		p.reap.Stop()
		p.reap = nil
	}
	p.mu.Unlock()
	for _, w := range idle {
		w.ch <- false
	}
}
