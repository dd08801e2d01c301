//go:build unix

package nethttp

import (
	"sync"
	"time"
)

// workerIdle is how long a handler goroutine with nothing to run waits for a request before
// it ends.
const workerIdle = time.Second

// maxIdleWorkers bounds the goroutines kept waiting for requests.
const maxIdleWorkers = 256

// workers runs the requests' handlers on goroutines that are kept between requests, so that a
// request does not pay for a new goroutine's stack to grow to a handler's depth (net/http
// keeps one goroutine per connection for that reason, and its stack).
type workers struct {
	mu   sync.Mutex
	idle []*worker
}

type worker struct {
	ch chan *exchange
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

// work serves x, then each request it is given, until it has waited workerIdle for none.
func (p *workers) work(w *worker, x *exchange) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		x.serve()
		x = nil // not kept alive while waiting
		p.mu.Lock()
		if len(p.idle) >= maxIdleWorkers {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		t.Reset(workerIdle)
		select {
		case x = <-w.ch:
			if x == nil {
				return // stop
			}
			continue
		case <-t.C:
		}
		p.mu.Lock()
		for i, v := range p.idle {
			if v == w {
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		if x = <-w.ch; x == nil { // taken from idle as the timer fired: its request is coming
			return
		}
	}
}

// stop ends the goroutines waiting for requests.
func (p *workers) stop() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.ch <- nil
	}
}
