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
	afters *afterFunc    // AfterFunc's not stopped nor run (a list by next), or &cancelled
}

// afterFunc is one AfterFunc's f; done once it ran or was stopped. next is the list's next.
type afterFunc struct {
	f    func()
	next *afterFunc
	done bool
}

// cancelled is reqCtx.afters once the context is cancelled (Err is context.Canceled): a
// sentinel, not a field of its own, keeps a reqState in a smaller size class.
var cancelled afterFunc

// gone reports whether c is cancelled (with c.mu held).
func (c *reqCtx) gone() bool { return c.afters == &cancelled }

func (c *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.gone() {
			close(c.done)
		}
	}
	return c.done
}

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone() {
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
	if c.gone() {
		c.mu.Unlock()
		a.done = true
		go f()
		return func() bool { return false }
	}
	a.next, c.afters = c.afters, a
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.done {
			return false
		}
		a.done = true
		for p := &c.afters; *p != nil; p = &(*p).next {
			if *p == a {
				*p = a.next
				break
			}
		}
		return true
	}
}

// cancel cancels c (context.Canceled); later calls do nothing.
func (c *reqCtx) cancel() {
	c.mu.Lock()
	if c.gone() {
		c.mu.Unlock()
		return
	}
	afters := c.afters
	c.afters = &cancelled
	if c.done != nil {
		close(c.done)
	}
	for a := afters; a != nil; a = a.next {
		a.done = true
	}
	c.mu.Unlock()
	for a := afters; a != nil; a = a.next {
		go a.f()
	}
}
