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
// keeps one goroutine per connection for that reason, and its stack). A waiting goroutine
// waits on its channel alone: one timer for the pool (reap), not one per request, ends those
// that have waited through a whole tick of it.
type workers struct {
	mu     sync.Mutex
	idle   []*worker // the longest waiting first
	gen    uint64    // reap's ticks
	reap   *time.Timer
	reapID uint64 // reap's, told apart from a timer stopped (stop) as it fired

	// stopped is set by stop: a goroutine that ends its request after it (its handler's end
	// counted, Server.Wait returned) ends instead of waiting for another.
	stopped bool
}

type worker struct {
	ch  chan *exchange
	gen uint64 // the tick in which it began to wait
}

// run runs x.serve on a waiting goroutine, or on a new one.
func (p *workers) run(x *exchange) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.ch <- x
		return
	}
	p.mu.Unlock()
	go p.work(&worker{ch: make(chan *exchange, 1)}, x)
}

// work serves x, then each request it is given, until it is told to stop (nil).
func (p *workers) work(w *worker, x *exchange) {
	for x != nil {
		x.serve()
		x = nil // not kept alive while waiting
		p.mu.Lock()
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
		x = <-w.ch
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
		p.idle[n].ch <- nil // it waits: its channel is empty
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
		w.ch <- nil
	}
}
