//go:build unix

package fileio

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// opKind is what an operation record asks for.
type opKind uint8

const (
	kindRead opKind = iota + 1
	kindWrite
	kindReadv
	kindWritev
	kindReadFixed
	kindWriteFixed
	kindFsync
	kindFdatasync
	// Control operations, run by the engine's owner (never by the kernel).
	kindCtlRegisterFile   // give file a registered-file slot
	kindCtlUnregisterFile // empty file's slot
	kindCtlCancelFile     // cancel file's operations (File.Close)
	kindCtlBuffers        // register bufs as fixed buffers
	kindCtlShutdown       // stop the owner (Ring.Close)
	kindCtlPause          // hold the owner until resume is closed (tests)
)

// names of the kinds, for errors.
var kindNames = [...]string{
	kindRead: "read", kindWrite: "write", kindReadv: "readv", kindWritev: "writev",
	kindReadFixed: "read_fixed", kindWriteFixed: "write_fixed", kindFsync: "fsync", kindFdatasync: "fdatasync",
}

func (k opKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "control"
}

// States of an op record. A caller queues a record (stQueued); the owner takes it (stOwned),
// submits it and completes it (stDone, then the done channel). A caller whose context ends
// first either drops a record the owner has not taken (stDropped: the owner recycles it when it
// comes to it) or asks the owner to cancel one it has (stCancelWanted, then the cancel stack).
const (
	stIdle uint32 = iota
	stQueued
	stOwned
	stCancelWanted
	stDropped
	stDone
)

// resClosed is the result of an operation failed because its file or ring was closing: it
// becomes an error wrapping os.ErrClosed.
const resClosed = -1 << 31

// op is one operation: a recycled record with a parking slot (done) for the caller. Only the
// fields up to done are written by the caller; the rest belong to the owner.
type op struct {
	next  *op // link in the submission stack (written before the push publishes it)
	cnext *op // link in the cancel stack
	state atomic.Uint32

	kind  opKind
	file  *File
	buf   []byte       // read, write, fixed
	iovs  []unix.Iovec // readv, writev: the kernel reads them until the completion
	index uint16       // fixed-buffer index
	off   int64
	bufs  [][]byte // kindCtlBuffers

	res  int32 // bytes, -errno or resClosed
	err  error // a control operation's error
	done chan struct{}

	// Owner-only.
	slot         int32 // index in the owner's in-flight table, -1 when not in the kernel
	pprev, pnext *op   // owner's list of taken, unsubmitted operations
	cqeSeen      bool  // the result is in (cancel handshake)
	cancelPopped bool  // the owner has seen the cancel request
}

var opPool = sync.Pool{New: func() any { return &op{done: make(chan struct{}, 1), slot: -1} }}

// getOp returns a clean record from the pool.
func getOp() *op { return opPool.Get().(*op) }

// putOp clears what the record references (so pooled records keep no buffers alive) and
// returns it to the pool.
func putOp(o *op) {
	for i := range o.iovs {
		o.iovs[i] = unix.Iovec{}
	}
	o.iovs = o.iovs[:0]
	o.buf, o.file, o.bufs, o.err = nil, nil, nil, nil
	o.next, o.cnext, o.pprev, o.pnext = nil, nil, nil, nil
	o.res, o.index, o.off, o.kind = 0, 0, 0, 0
	o.slot, o.cqeSeen, o.cancelPopped = -1, false, false
	o.state.Store(stIdle)
	opPool.Put(o)
}

// complete is the owner's (or a worker's) last word on a record it owns: it stores the
// result and wakes the caller, unless the caller has asked to cancel it and the owner has not
// yet seen that request (then cancelSeen wakes it).
func complete(o *op, res int32) {
	o.res = res
	if o.state.CompareAndSwap(stOwned, stDone) {
		o.done <- struct{}{}
		return
	}
	// stCancelWanted: the record is (or will be) on the cancel stack.
	o.cqeSeen = true
	if o.cancelPopped {
		o.state.Store(stDone)
		o.done <- struct{}{}
	}
}

// wait parks the calling goroutine until o is done, or until ctx ends. Then a record the owner
// has not taken is dropped (reported true: the owner recycles it, the caller must not touch
// it); one it has is cancelled through cancel (nil: cannot be, wait for it) and waited for, so
// that the kernel is done with its buffers when wait returns.
func wait(ctx context.Context, o *op, cancel func(*op)) (dropped bool) {
	d := ctx.Done()
	if d == nil {
		<-o.done
		return false
	}
	select {
	case <-o.done:
		return false
	case <-d:
	}
	if o.state.CompareAndSwap(stQueued, stDropped) {
		return true
	}
	if cancel != nil && o.state.CompareAndSwap(stOwned, stCancelWanted) {
		cancel(o)
	}
	<-o.done
	return false
}
