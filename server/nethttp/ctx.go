//go:build unix

package nethttp

import (
	"context"
	"sync"
	"time"
)

// reqCtx is a request's context (r.Context()), cancelled when the client goes away, when the
// handler returns, or when the connection closes (cancel). It is part of the request's
// reqState, so it costs no allocation of its own, and its Done channel is made only when asked
// for. Its AfterFunc lets the contexts derived from it (context.WithCancel, WithTimeout,
// AfterFunc) follow its cancel without a goroutine of their own waiting on Done. Its parent
// carries the values (the Server's, LocalAddrContextKey) and is never cancelled.
type reqCtx struct {
	parent context.Context
	mu     sync.Mutex
	done   chan struct{} // made by Done, closed by cancel
	gone   bool          // cancelled: Err is context.Canceled
	afters []*afterFunc  // AfterFunc's, not stopped, not run
}

// afterFunc is one AfterFunc's f; done once it ran or was stopped.
type afterFunc struct {
	f    func()
	done bool
}

func (c *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.gone {
			close(c.done)
		}
	}
	return c.done
}

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return context.Canceled
	}
	return nil
}

func (c *reqCtx) Value(key any) any { return c.parent.Value(key) }

func (c *reqCtx) String() string { return "nethttp.requestContext" }

// AfterFunc runs f in a goroutine of its own once c is cancelled (at once if it is), as
// context.AfterFunc does; stop keeps f from running and reports whether it did.
func (c *reqCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		a.done = true
		go f()
		return func() bool { return false }
	}
	c.afters = append(c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.done {
			return false
		}
		a.done = true
		for i, b := range c.afters {
			if b == a {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				break
			}
		}
		return true
	}
}

// cancel cancels c (context.Canceled); later calls do nothing.
func (c *reqCtx) cancel() {
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		return
	}
	c.gone = true
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	for _, a := range afters {
		a.done = true
	}
	c.mu.Unlock()
	for _, a := range afters {
		go a.f()
	}
}
