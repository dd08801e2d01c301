package ringev

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// Signal is a handler for one signal number, delivered as a loop event.
type Signal struct {
	loop    *Loop
	sig     syscall.Signal
	handler func(s *Signal, count int)
	oneShot bool         // closed after its handler ran once (AddSignalOnce)
	count   atomic.Int64 // deliveries not yet handed to the handler
	closed  bool
}

// signalState is the loop's os/signal subscription: one channel, one goroutine that counts
// deliveries per handler and wakes the loop.
type signalState struct {
	loop     *Loop
	ch       chan os.Signal
	done     chan struct{}
	wg       sync.WaitGroup
	pending  atomic.Bool
	mu       sync.Mutex // guards handlers against the counting goroutine
	handlers []*Signal
	next     int // round-robin start for runSignal
	live     int
}

// AddSignal calls h on the loop's goroutine after sig is delivered to the process, with the
// number of deliveries since h last ran (count >= 1). Delivery goes through os/signal (so the
// Go runtime's own handling of the signal is replaced as signal.Notify documents). Errors:
// ErrClosed after Close; ErrNotOwner from another goroutine; an error for a signal number
// outside 1..64 or a nil handler.
//
// Counts are exact for the deliveries the Go runtime hands to os/signal. The runtime, like the
// kernel for a pending standard signal, merges a second delivery of one signal that arrives
// before its signal goroutine has taken the first; a process that raises one signal faster
// than that sees a lower count (the context benchmark prints raised and counted).
func (l *Loop) AddSignal(sig syscall.Signal, h func(s *Signal, count int)) (*Signal, error) {
	return l.addSignal(sig, h, false)
}

// AddSignalOnce is AddSignal for one delivery: after h has run once (with the count of
// deliveries so far) the handler is closed, as tevent's SA_RESETHAND signal events are.
func (l *Loop) AddSignalOnce(sig syscall.Signal, h func(s *Signal, count int)) (*Signal, error) {
	return l.addSignal(sig, h, true)
}

func (l *Loop) addSignal(sig syscall.Signal, h func(s *Signal, count int), oneShot bool) (*Signal, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if !l.owned() {
		return nil, ErrNotOwner
	}
	if sig <= 0 || sig > 64 || h == nil {
		return nil, fmt.Errorf("ringev: AddSignal(%d): need a signal number in 1..64 and a handler", int(sig))
	}
	if l.sig == nil {
		st := &signalState{loop: l, ch: make(chan os.Signal, 256), done: make(chan struct{})}
		st.wg.Add(1)
		go st.run()
		l.sig = st
	}
	st := l.sig
	s := &Signal{loop: l, sig: sig, handler: h, oneShot: oneShot}
	st.mu.Lock()
	st.handlers = append(st.handlers, s)
	st.mu.Unlock()
	st.live++
	signal.Notify(st.ch, sig)
	return s, nil
}

// Close removes the handler; deliveries not yet handed to it are dropped. Idempotent; a no-op
// from a goroutine other than the loop's owner.
func (s *Signal) Close() {
	if s.closed || !s.loop.owned() {
		return
	}
	s.closed = true
	st := s.loop.sig
	if st == nil {
		return
	}
	st.mu.Lock()
	for i, x := range st.handlers {
		if x == s {
			st.handlers = append(st.handlers[:i], st.handlers[i+1:]...)
			break
		}
	}
	st.mu.Unlock()
	st.live--
}

// run counts deliveries until stop.
func (st *signalState) run() {
	defer st.wg.Done()
	for {
		select {
		case <-st.done:
			return
		case v := <-st.ch:
			sig, ok := v.(syscall.Signal)
			if !ok {
				continue
			}
			st.mu.Lock()
			for _, s := range st.handlers {
				if s.sig == sig {
					s.count.Add(1)
				}
			}
			st.mu.Unlock()
			st.pending.Store(true)
			st.loop.wake()
		}
	}
}

// stop ends the subscription and waits for the counting goroutine.
func (st *signalState) stop() {
	signal.Stop(st.ch)
	close(st.done)
	st.wg.Wait()
}

// hasSignals reports whether any signal handler is live (Run keeps waiting for it).
func (l *Loop) hasSignals() bool { return l.sig != nil && l.sig.live > 0 }

// runSignal runs one signal handler that has deliveries; false if none had.
func (l *Loop) runSignal() bool {
	st := l.sig
	st.pending.Store(false)
	n := len(st.handlers)
	for i := 0; i < n; i++ {
		k := (st.next + i) % n
		s := st.handlers[k]
		c := s.count.Swap(0)
		if c == 0 {
			continue
		}
		st.next = k + 1
		st.pending.Store(true) // others may still have counts; the next Once looks again
		if s.oneShot {
			s.Close()
		}
		l.call(func() { s.handler(s, int(c)) })
		return true
	}
	return false
}
