//go:build unix

package ringev

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Signal is a handler for one signal number, delivered as a loop event.
type Signal struct {
	loop    *Loop
	sig     syscall.Signal
	handler func(s *Signal, count int)
	oneShot bool         // closed after its handler ran once (AddSignalOnce)
	count   atomic.Int64 // deliveries not yet handed to the handler
	seen    uint64       // WithExactSignals: sigexactCounts[sig] already added to count
	closed  atomic.Bool  // set by Close, from any goroutine; runSignal skips a closed handler
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

	// WithExactSignals: the loop's own handler counts into sigexactCounts instead.
	exact bool
	saved map[syscall.Signal]kernelSigaction // actions replaced, per signal with a live handler
}

var (
	// ErrExactSignalsInUse is returned by AddSignal on a WithExactSignals loop while another
	// loop of the process uses exact signals.
	ErrExactSignalsInUse = errors.New("ringev: another loop of this process already uses WithExactSignals")

	sigexactOwner atomic.Pointer[Loop] // the loop that uses exact signals
	sigexactOnce  sync.Once
	sigexactFd    = -1 // the eventfd the handler writes to; open for the process's life
	sigexactErr   error
)

// isPending reports whether a signal handler may have deliveries to run.
func (st *signalState) isPending() bool {
	return st.pending.Load() || (st.exact && atomic.LoadUint32(&sigexactPending) != 0)
}

// startExact makes l the process's exact-signal loop: it watches the exact-signal eventfd.
func (l *Loop) startExact() (*signalState, error) {
	if !sigexactSupported {
		_, err := sigexactInstall(0)
		return nil, err
	}
	sigexactOnce.Do(func() {
		sigexactFd, sigexactErr = newEventfd()
		if sigexactErr != nil {
			sigexactErr = fmt.Errorf("ringev: WithExactSignals: eventfd: %w", sigexactErr)
		}
	})
	if sigexactErr != nil {
		return nil, sigexactErr
	}
	if !sigexactOwner.CompareAndSwap(nil, l) {
		return nil, ErrExactSignalsInUse
	}
	s := l.slot(int32(sigexactFd))
	l.markInternal(s)
	if err := l.setInterest(s, unix.POLLIN); err != nil {
		sigexactOwner.Store(nil)
		return nil, fmt.Errorf("ringev: WithExactSignals: watching its eventfd: %w", err)
	}
	atomic.StoreInt64(&sigexactWakeFd, int64(sigexactFd))
	return &signalState{loop: l, exact: true, saved: map[syscall.Signal]kernelSigaction{}}, nil
}

// runtimeSignal reports the signals the Go runtime needs for itself, refused by
// WithExactSignals.
func runtimeSignal(sig syscall.Signal) bool {
	switch sig {
	case unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGURG, unix.SIGPROF,
		unix.SIGKILL, unix.SIGSTOP:
		return true
	}
	// 32 and 33 sit below the C library's SIGRTMIN (34): the Go runtime (and glibc) use 33 to
	// make every thread run setuid/setgid/setgroups; a handler of the loop's there would hang
	// those calls for ever.
	return sig == 32 || sig == 33
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
// than that sees a lower count. A loop made WithExactSignals counts every delivery the kernel
// makes, as tevent does (its own handler instead of os/signal; see WithExactSignals).
func (l *Loop) AddSignal(sig syscall.Signal, h func(s *Signal, count int)) (*Signal, error) {
	return l.addSignal(sig, h, false)
}

// AddSignalOnce is AddSignal for one delivery: after h has run once (with the count of
// deliveries so far) the handler is closed, as tevent's SA_RESETHAND signal events are.
func (l *Loop) AddSignalOnce(sig syscall.Signal, h func(s *Signal, count int)) (*Signal, error) {
	return l.addSignal(sig, h, true)
}

func (l *Loop) addSignal(sig syscall.Signal, h func(s *Signal, count int), oneShot bool) (*Signal, error) {
	if !l.owned() { // first: the closed flags belong to the owner (no data race)
		return nil, ErrNotOwner
	}
	if l.closed {
		return nil, ErrClosed
	}
	if sig <= 0 || sig > 64 || h == nil {
		return nil, fmt.Errorf("ringev: AddSignal(%d): need a signal number in 1..64 and a handler", int(sig))
	}
	if l.exactSig && runtimeSignal(sig) {
		return nil, fmt.Errorf("ringev: AddSignal(%v): WithExactSignals cannot take a signal the Go runtime needs", sig)
	}
	if l.sig == nil {
		if l.exactSig {
			st, err := l.startExact()
			if err != nil {
				return nil, err
			}
			l.sig = st
		} else {
			st := &signalState{loop: l, ch: make(chan os.Signal, 256), done: make(chan struct{})}
			st.wg.Add(1)
			go st.run()
			l.sig = st
		}
	}
	st := l.sig
	s := &Signal{loop: l, sig: sig, handler: h, oneShot: oneShot}
	if st.exact {
		s.seen = atomic.LoadUint64(&sigexactCounts[sig])
		if _, ok := st.saved[sig]; !ok {
			old, err := sigexactInstall(sig)
			if err != nil {
				return nil, err
			}
			st.saved[sig] = old
		}
	}
	st.mu.Lock()
	st.handlers = append(st.handlers, s)
	st.mu.Unlock()
	if !st.exact {
		signal.Notify(st.ch, sig)
	}
	return s, nil
}

// Close removes the handler; deliveries not yet handed to it are dropped, and no run begins
// after Close has returned (Close does not wait for a run the loop has begun). Idempotent. It
// is safe from any goroutine: from one that does not own the loop the removal is posted to the
// loop, as Post does.
func (s *Signal) Close() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	if l := s.loop; !l.owned() {
		l.Post(s.remove) // ErrClosed: the loop's Close ended every subscription
		return
	}
	s.remove()
}

// remove takes the closed handler out of the loop's subscription (on the loop's goroutine).
func (s *Signal) remove() {
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
	if st.exact {
		st.restoreUnused(s.sig)
	}
}

// restoreUnused puts back the previous action of sig when no handler watches it any more.
func (st *signalState) restoreUnused(sig syscall.Signal) {
	for _, x := range st.handlers {
		if x.sig == sig {
			return
		}
	}
	if old, ok := st.saved[sig]; ok {
		sigexactRestore(sig, old) // fails only for a signal number rt_sigaction took before
		delete(st.saved, sig)
	}
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

// stop ends the subscription: it waits for the counting goroutine, or, with exact signals, puts
// back the previous actions and lets another loop use exact signals.
func (st *signalState) stop() {
	if st.exact {
		for sig, old := range st.saved {
			sigexactRestore(sig, old) // fails only for a signal number rt_sigaction took before
		}
		st.saved = nil
		st.loop.be.setInterest(int32(sigexactFd), 0, unix.POLLIN, 0) // the loop is closing: its slots are gone
		sigexactOwner.Store(nil)
		return
	}
	signal.Stop(st.ch)
	close(st.done)
	st.wg.Wait()
}

// hasSignals reports whether any signal handler is live (Run keeps waiting for it).
func (l *Loop) hasSignals() bool { return l.sig != nil && len(l.sig.handlers) > 0 }

// runSignal runs one signal handler that has deliveries; false if none had.
func (l *Loop) runSignal() bool {
	st := l.sig
	st.pending.Store(false)
	if st.exact {
		atomic.StoreUint32(&sigexactPending, 0)
		for _, s := range st.handlers {
			if total := atomic.LoadUint64(&sigexactCounts[s.sig]); total != s.seen {
				s.count.Add(int64(total - s.seen))
				s.seen = total
			}
		}
	}
	n := len(st.handlers)
	for i := 0; i < n; i++ {
		k := (st.next + i) % n
		s := st.handlers[k]
		c := s.count.Swap(0)
		if c == 0 || s.closed.Load() {
			continue
		}
		st.next = k + 1
		st.pending.Store(true) // others may still have counts; the next Once looks again
		if s.oneShot {
			if !s.closed.CompareAndSwap(false, true) {
				continue // closed from another goroutine meanwhile
			}
			s.remove()
		}
		l.call(func() { s.handler(s, int(c)) })
		return true
	}
	return false
}
