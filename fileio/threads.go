//go:build unix

package fileio

import (
	"sync"
	"sync/atomic"
)

// The fallback engine (ModeThreads): a bounded pool of goroutines takes the operations from a
// channel and runs each as a blocking system call (pread(2), pwrite(2), preadv(2),
// pwritev(2), fsync(2), fdatasync(2)), so at most the pool's size of OS threads wait in the
// kernel at once. An operation a worker has begun cannot be cancelled; one still queued can.
type threadEngine struct {
	ch  chan *op
	wg  sync.WaitGroup
	ops atomic.Uint64
}

func startThreads(n int) *threadEngine {
	e := &threadEngine{ch: make(chan *op, 4*n)}
	e.wg.Add(n)
	for range n {
		go e.worker()
	}
	return e
}

func (e *threadEngine) queue(o *op) { e.ch <- o }

func (e *threadEngine) canceler() func(*op) { return nil }

func (e *threadEngine) stats() Stats { return Stats{RingOps: e.ops.Load()} }

func (e *threadEngine) control(o *op) error {
	if o.kind == kindCtlShutdown {
		close(e.ch)
		e.wg.Wait()
	}
	// Nothing to register; File.Close's cancel is the workers' closedBit check.
	return nil
}

func (e *threadEngine) worker() {
	defer e.wg.Done()
	for o := range e.ch {
		if !o.state.CompareAndSwap(stQueued, stOwned) {
			putOp(o) // dropped
			continue
		}
		if o.file.refs.Load()&closedBit != 0 {
			complete(o, resClosed)
			continue
		}
		e.ops.Add(1)
		complete(o, run(o))
	}
}
