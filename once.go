//go:build unix

package ringev

// This file is the loop's hot path, kept together so that it shares as few code pages as
// possible: on machines where every system call costs a TLB refill (PTI), each distinct page
// touched between two syscalls costs a TLB refill, and a loop turn runs a few syscalls per event
// (docs/design.md, "Where the time goes"). The assembly it calls (internal/rawsys) is one
// more page.

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
	"golang.org/x/sys/unix"
)

// Once runs exactly one handler and returns: a signal handler, else a posted function, else an
// immediate, else an expired timer, else it waits for the fds (at most until the next timer is
// due, waiting once) and runs one fd handler, the least recently run among the ready ones, or
// a batch of request completions (request_dispatch.go; the loop contract's point 11); but after
// FdStarvationLimit Onces that ran the others since the fds last had their turn, it first looks
// at the fds without blocking and runs a ready fd handler if there is one. It
// returns ErrNothingToDo when there is nothing to wait for, ErrNested inside a handler,
// ErrNotOwner from a goroutine other than the owner,
// ErrClosed after Close, and the backend's error (wrapping the errno) if waiting fails; when
// a watched fd turns out to be invalid (POLLNVAL, or EBADF from the handler's
// Loop.ReadNonblocking or WriteNonblocking on it: closed with close(2) behind the loop's back)
// its handlers are disarmed (flags cleared) and Once returns an error wrapping unix.EBADF that
// names the fd.
func (l *Loop) Once() error {
	if !l.owned() {
		return ErrNotOwner
	}
	if l.inside || l.turnAt != 0 && l.nested() {
		return ErrNested
	}
	if l.closed {
		return ErrClosed
	}
	if l.fresh {
		l.cacheLeft = 0 // WithFreshReadiness: no readiness from an earlier Once
	}
	for {
		// Each of the others may find that the fds' turn comes first (FdStarvationLimit); the
		// fd path does not look.
		if l.sig != nil && l.sig.isPending() && l.turnOrSignal() {
			return l.ranOther()
		}
		if l.posted.Load() && l.turnOrPosted() {
			return l.ranOther()
		}
		if l.imm.head != nil {
			l.turnOrImmediate()
			return l.ranOther()
		}
		timeout := int64(-1)
		if len(l.timers) > 0 {
			if timeout = l.timerTimeout(); timeout < 0 {
				return l.ranOther() // a timer ran (or the fds' turn came first)
			}
		}
		// (A loop with requests pending, the usual one with no fd event, is not asked.)
		if (l.rs == nil || l.rs.live == 0) && l.nfd == 0 && timeout < 0 && !(l.running && l.stopReq.Load()) && l.nothingToDo() {
			return ErrNothingToDo
		}
		pending := l.rs != nil && l.rs.pending()
		if pending && l.runTurn() {
			return nil // completions (request_dispatch.go)
		}
		// Readiness from the previous wait that no handler has used up yet comes first, or,
		// newer, what the last handler's I/O found (rideIO).
		if l.news {
			if err := l.adoptNews(); err != nil {
				return err
			}
		}
		if l.cacheLeft > 0 && l.dispatchFd() {
			return l.dispatchRest()
		}
		// A loop with no fd event on uring takes the request turn first: it serves the
		// completions of requests without the fds' part of the wait (reqDriving.turn).
		var err error
		t := turnNone
		if l.turner != nil && l.nfd == 0 && !pending {
			if t = l.turner.turn(l); t == turnRan {
				l.turnAt = 0 // (the turn set it for its callbacks)
				return nil
			}
			if t == turnReaped {
				err, l.rs.turnErr = l.rs.turnErr, nil // (the readiness is in l.cache)
			}
		}
		if t == turnNone {
			var ready []readyFd
			ready, err = l.wait(l.reqWait(timeout))
			if unsafe.SliceData(ready) == unsafe.SliceData(l.cache) {
				l.cache = l.cache[:len(ready)] // the usual case: no pointer store, no write barrier
			} else {
				l.cache = ready
			}
		}
		if err != nil {
			return err
		}
		if err := l.markReady(); err != nil {
			return err
		}
		if l.rs != nil && l.rs.pending() && l.runTurn() {
			return nil
		}
		if l.dispatchFd() {
			return l.dispatchRest()
		}
		if l.running && l.stopReq.Load() {
			return nil // Run returns; Once outside Run does not heed Stop
		}
	}
}

// runTurn runs a batch of completions if it is their turn: completions and fd handlers take
// turns when both are ready (an fd handler ran since the last batch, or no fd readiness is
// left to serve). It reports whether it ran one. The requests' driver runs the batch
// (reqDriving.runBatch): at most reqBatch completions, in the order the loop learned of them.
func (l *Loop) runTurn() bool {
	rs := l.rs
	if l.dispatch == rs.seen && (l.cacheLeft > 0 || l.nfd > 0 && l.waitSeq == rs.seenWait) {
		// The fd handlers' turn: no fd handler ran since the last batch, and one is ready, or
		// the fds were not looked at since (Once then looks without blocking: see reqWait).
		return false
	}
	rs.seen, rs.seenWait = l.dispatch, l.waitSeq
	// The callbacks run with the nesting guard set, once for the batch: endTurn resets it
	// (and the requests' batch state: cbFd, cbRec) also when a callback panics out of Once. A
	// callback cannot close the loop (Close returns ErrNested).
	l.inside = true
	defer l.endTurn()
	return l.rd.runBatch(reqBatch)
}

// nested reports whether the request turn whose guard is set (turnAt) is running below the
// caller: a callback of it called Once, Run or Close. When it is not (a callback panicked out
// of Once and the caller recovered), the guard is cleared. The turn is this loop's when the
// variable at turnAt is in the live part of the stack and holds this loop's mark, its address
// complemented (another loop's turn, running where this one's ran, holds that loop's), and the
// frame around it is a live frame of the turn: the chain of frame pointers, which links the
// live frames only, holds the turn's frame pointer where that variable's frame would have it
// (turnFP), and the return address into that frame is the turn's. A slot of a live frame
// that still holds the mark of a turn that panicked is not in a live frame of the turn at that
// place (a turn running there now would have written its own mark). Where Go keeps no frame
// pointers (other than amd64 and arm64), or the chain leaves the goroutine's stack (a cgo
// callback), it walks the stack with runtime.Callers, all of it, and takes any turn's frame
// for this loop's. Only when the guard is found set, never on a loop's usual path.
//
//go:noinline
func (l *Loop) nested() bool {
	if st := l.stack; st != &anyStack { // (without the owner's bounds, the walk alone)
		var probe byte
		base := unsafe.Pointer(&probe)
		sp, top := uintptr(base), st[1]
		word := func(at uintptr) uintptr { return *(*uintptr)(unsafe.Add(base, at-sp)) }
		at := top - l.turnAt
		if at-sp >= top-sp || word(at) != ^uintptr(unsafe.Pointer(l)) {
			l.turnAt = 0
			return false
		}
		if fp := rawsys.FramePointer(); fp != 0 && framesLinked {
			// (No call until the walk ends: the stack cannot move under the addresses.)
			want := at + l.turnFP
			for prev := fp; ; prev = word(prev) {
				if next := word(prev); next <= prev || next > top-2*unsafe.Sizeof(prev) {
					break // the chain leaves the stack
				} else if next >= want {
					// prev's record holds the return address into the frame at next.
					if next == want && turnCode(word(prev+unsafe.Sizeof(prev))) {
						return true
					}
					l.turnAt = 0
					return false
				}
			}
		}
	}
	var buf [64]uintptr
	pcs := buf[:]
	n := runtime.Callers(2, pcs)
	for n == len(pcs) { // the whole stack, in one call (a chunk's skip would count inlined frames)
		pcs = make([]uintptr, 2*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, turnFunc) {
			return true
		}
		if !more {
			break
		}
	}
	l.turnAt = 0
	return false
}

// turnCode reports whether the return address pc is in the request turn's code (one of its
// calls of a callback; nested).
func turnCode(pc uintptr) bool {
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, turnFunc) {
			return true
		}
		if !more {
			return false
		}
	}
}

// frameFrom returns the caller's frame pointer less the address of mark, a variable in the
// caller's frame (Loop.turnFP): its frame record's first word holds the caller's. 1 where Go
// keeps no frame pointers (nested walks with runtime.Callers there).
//
//go:noinline
func frameFrom(mark *uintptr) uintptr {
	fp := rawsys.FramePointer()
	if fp == 0 || !framesLinked {
		return 1
	}
	m := uintptr(unsafe.Pointer(mark))
	return *(*uintptr)(unsafe.Add(unsafe.Pointer(mark), fp-m)) - m
}

// framesLinked says whether the frame pointers link the frames as nested reads them: a frame's
// record holds its caller's frame pointer, then its return address into the caller (checked
// once, linkedFrom). Otherwise nested walks with runtime.Callers.
var framesLinked = linkedAbove()

// linkedAbove checks, from this frame, that the record of a frame it calls holds this frame's
// frame pointer and a return address into this function (linkedFrom). A stack that moved in
// between (the call grew it) makes it look again.
//
//go:noinline
func linkedAbove() bool {
	for {
		var here byte
		fp := rawsys.FramePointer()
		if fp == 0 {
			return false
		}
		if ok, moved := linkedFrom(&here, uintptr(unsafe.Pointer(&here)), fp); !moved {
			return ok
		}
	}
}

// linkedFrom is linkedAbove's callee: here is a variable of the caller's frame, at was when
// the caller read its frame pointer (outer); moved when it is not any more.
//
//go:noinline
func linkedFrom(here *byte, was, outer uintptr) (ok, moved bool) {
	fp := rawsys.FramePointer()
	base := unsafe.Pointer(here)
	if uintptr(base) != was {
		return false, true
	}
	rec := unsafe.Add(base, fp-was)
	if *(*uintptr)(rec) != outer {
		return false, false
	}
	f, _ := runtime.CallersFrames([]uintptr{*(*uintptr)(unsafe.Add(rec, unsafe.Sizeof(fp)))}).Next()
	return strings.HasSuffix(f.Function, "/ringev.linkedAbove"), false
}

// turnFunc ends the name of the request turn's function as the runtime gives it (nested).
const turnFunc = "/ringev.(*ringReqs).turn"

// endTurn ends runTurn's batch (deferred): the nesting guard off, no callback running
// (reqShared.cbFd), and the record of a last callback that panicked back in the pool
// (reqShared.cbRec). Small enough to be inlined into runTurn's deferred call.
func (l *Loop) endTurn() {
	l.inside = false
	rs := l.rs
	rs.cbFd = -1
	if rs.cbRec != 0 {
		l.rl.putBack()
	}
}

// reqWait is the timeout of Once's wait: 0 while completions wait for their callbacks
// (the wait only looks at the fds, whose turn it is), else timeout.
func (l *Loop) reqWait(timeout int64) int64 {
	if l.rs != nil && l.rs.pending() {
		return 0
	}
	return timeout
}

// wait asks the backend what is ready, blocking for at most timeout ns (< 0: no deadline). A
// busy loop (the last wait found something) first looks without blocking: that look needs no
// announcement to posters, and on the hot path it is the only one. Before blocking, the loop
// announces the wait, then looks once more for work posted meanwhile (and for a pending Stop or
// signal): a poster that sees sleeping==true writes the eventfd; one that does not has set
// posted before we read it here. A wait that will block may first yield to the Go scheduler
// (yieldBeforeBlock); a Post meanwhile finds sleeping==true and wakes the wait.
func (l *Loop) wait(timeout int64) ([]readyFd, error) {
	l.waits++
	// A look that a handler's I/O sent through the ring and that found nothing is still in
	// flight: the blocking wait below collects it, at once if something is ready by now (the
	// enter runs the ring's pending completion work before it sleeps), so a look of our own
	// first would be a syscall for nothing.
	if l.busy && !l.lookInFlight && (l.rd == nil || !l.rd.needWait()) {
		var ready []readyFd
		var err error
		if l.epfd >= 0 {
			ready, err = epollLook(l.epfd, l.cache[:0]) // what be.wait(0) would do, without its pages
		} else {
			ready, err = l.be.wait(0, l.cache[:0])
		}
		if len(ready) == cap(ready) && err == nil {
			ready, err = l.fillCache(ready)
		}
		if err != nil || len(ready) > 0 {
			return ready, err
		}
		l.busy = false
	}
	l.sleeping.Store(true)
	// Stop is read here, after the announcement, like posted: a Stop that lands before it
	// found sleeping==false and wrote no wake-up.
	if l.posted.Load() || (l.running && l.stopReq.Load()) || (l.sig != nil && l.sig.isPending()) {
		timeout = 0
	}
	if timeout != 0 && !l.lateYield {
		l.yieldBeforeBlock()
	}
	ready, err := l.be.wait(timeout, l.cache[:0])
	if len(ready) == cap(ready) && err == nil {
		ready, err = l.fillCache(ready)
	}
	l.lookInFlight = false // collected, or (a timeout) the next busy look just costs a syscall
	l.sleeping.Store(false)
	l.busy = len(ready) > 0
	return ready, err
}

// markReady processes what a wait returned: it drains the wake-up eventfd, disarms fds the
// kernel reports invalid, drops stale events, and marks every other reported slot usable for
// dispatch (cacheLeft counts them), with the flags it is ready for (fdSlot.ready). It then makes
// the round's dispatch order, least recently run first, in two parts. The fd events that ran
// in the last round come last (Loop.last), in the order they ran: each ran after every other
// event did; pickFd passes over those that are not ready now. The others that the flags concern,
// which ran before, or never, come first (Loop.order, addOthers), in the order the wait
// reported them; pickFd sorts them by their last run only if they are out of order and more than
// one is picked (a busy loop has none: its fds' events ran in the last round). The work is one
// visit per reported fd, and per fd event on the fds whose events did not all run in the last
// round, whatever the number of watched fds. The rare cases go out of line (offGen, invalidFd,
// errorReady, addOthers, then markRare), so that the loop keeps its registers.
func (l *Loop) markReady() error {
	l.waitSeq++
	seq := l.waitSeq
	ranLast := (seq - 1) | markRan // the mark of a slot whose event ran in the last round
	l.order, l.pos, l.unsorted = l.order[:0], 0, 0
	left := 0
	cache, slots := l.cache, l.slots
	for i := range cache {
		r := &cache[i]
		if uint(r.Fd) >= uint(len(slots)) {
			continue
		}
		s := slots[r.Fd]
		switch {
		case s == nil:
		case uint32(r.Pad) != s.gen:
			l.offGen(s) // one of the loop's own eventfds, or a stale event: never dispatched
		case r.Events&unix.POLLNVAL != 0:
			l.invalidFd(s)
		case s.mark == seq: // reported twice by one wait: once is enough
		default:
			ran := s.mark == ranLast
			s.mark = seq
			left++
			ready := pollFlags(r.Events)
			if r.Events&(unix.POLLERR|unix.POLLHUP|pollRdHup) != 0 {
				ready = l.errorReady(s, r.Events)
			}
			s.ready = ready
			if !ran || len(s.events) != 1 {
				l.addOthers(s) // unless the slot's one event ran in the last round: l.ran has it
			}
		}
	}
	l.cacheLeft = left
	l.last, l.ran, l.lpos = l.ran, l.last[:0], 0
	l.roundAt = l.dispatch
	if l.rare {
		return l.markRare()
	}
	return nil
}

// addOthers is markReady's branch for a slot whose events did not all run in the last round:
// those that did not, and want some of what the slot is ready for, go to the first part of the
// round's order (Loop.order), in the order the wait reported them. When they are out of order
// (their last runs not ascending), unsorted says so, for pickOthers.
//
//go:noinline
func (l *Loop) addOthers(s *fdSlot) {
	round := l.roundAt
	for _, ev := range s.events {
		if ev.flags&s.ready == 0 || ev.lastRun > round {
			continue // not wanted, or ran in the last round (it is in l.ran)
		}
		if n := len(l.order); n > 0 && ev.lastRun < l.order[n-1].lastRun && l.unsorted == 0 {
			l.unsorted, l.scanned = math.MaxInt, false
		}
		l.order = append(l.order, ev)
	}
}

// markRan is the bit of fdSlot.mark that runFd sets, with the round's number, on the slot of the
// event it runs: the slot's readiness is used up, and the next markReady knows that an event of
// the slot ran in the last round.
const markRan = 1 << 63

// maxCache is the most fds one wait can report (the readiness cache's capacity, grown by
// fillCache): 48 KiB of epoll_event.
const maxCache = 4096

// fillCache is called when a wait filled the readiness cache (ready): more fds may be ready
// than it could report, and the dispatch order should hold them all, so that the least recently
// run of every ready fd's events goes first (with a partial report, the kernel's order decides
// which fds are seen first). It doubles the cache's capacity, up to maxCache, and on the epoll
// set backends looks again without blocking, appending what the set reports now (the fds
// reported already come again, level-triggered: markReady takes each once), until a look leaves
// room. On the others the next wait reports more.
//
//go:noinline
func (l *Loop) fillCache(ready []readyFd) ([]readyFd, error) {
	for len(ready) == cap(ready) && 2*cap(ready) <= maxCache {
		ready = append(make([]readyFd, 0, 2*cap(ready)), ready...)
		if l.epfd < 0 {
			break
		}
		var err error
		if ready, err = epollLook(l.epfd, ready); err != nil {
			return ready, err
		}
	}
	return ready, nil
}

// errorReady is markReady's branch for an fd reported with an error, hang-up or half-close
// (revents: POLLERR, POLLHUP, POLLRDHUP): it applies tevent's rule to the slot's events
// (errorFlags) and returns the flags the fd is ready for: Error and Read beside what poll(2)
// reported, and hangup on an error or hang-up.
//
//go:noinline
func (l *Loop) errorReady(s *fdSlot, revents uint32) Flags {
	l.errorFlags(s, revents)
	ready := pollFlags(revents) | Error | Read
	if revents&(unix.POLLERR|unix.POLLHUP) != 0 {
		ready |= hangup
	}
	return ready
}

// offGen is markReady's branch for an event whose generation is not its slot's: one of the
// loop's own eventfds (their generation, internalGen, never matches) is drained; any other is
// stale, from an orphaned epoll registration (setInterest), and makes markReady rebuild the set.
//
//go:noinline
func (l *Loop) offGen(s *fdSlot) {
	if s.internal {
		drainEventfd(int(s.fd))
		return
	}
	l.stale, l.rare = true, true
}

// invalidFd is markReady's branch for an fd the kernel reports invalid (POLLNVAL): its events
// are disarmed, and markReady returns the error.
//
//go:noinline
func (l *Loop) invalidFd(s *fdSlot) {
	l.nvalErr = l.disarmInvalid(s)
	l.rare = true
}

// markRare finishes a markReady that met an invalid fd or a stale event: it rebuilds the epoll
// set after a stale event and returns the error markReady returns.
//
//go:noinline
func (l *Loop) markRare() error {
	err := l.nvalErr
	l.nvalErr, l.rare = nil, false
	if l.stale {
		if rerr := l.rebuildEpollSet(); err == nil {
			err = rerr
		}
	}
	return err
}

// dispatchFd runs the handler of the ready fd event that ran least recently (pickFd), among
// the events of the slots whose readiness is still usable. It reports whether a handler ran;
// the slot of the handler that ran is no longer usable until the next wait.
func (l *Loop) dispatchFd() bool {
	if l.cacheLeft <= 0 {
		return false
	}
	ev, f := l.pickFd()
	if ev == nil {
		l.cacheLeft = 0
		return false
	}
	l.runFd(ev, f)
	return true
}

// pickFd returns the ready fd event that ran least recently and the flags to hand it, or nil.
// It walks the round's order (markReady) from the first entry not used up to the first that
// is still ready: its slot's readiness unused (mark), some of the flags the slot is ready for
// still wanted by the event (a mask change has effect at once; a handler run, a Close or an
// AddFd on the fd uses the slot up), and the event not closed. An entry passed over stays passed
// over for the round, so a round visits each entry once, however many picks it makes. It
// makes no calls on a busy loop's path, so it stays small.
func (l *Loop) pickFd() (*FdEvent, Flags) {
	if l.pos < len(l.order) {
		if ev, f := l.pickOthers(); ev != nil {
			return ev, f
		}
	}
	seq := l.waitSeq
	last := l.last
	for i := l.lpos; i < len(last); i++ {
		ev := last[i]
		s := ev.slot
		if f := s.ready & ev.flags; f != 0 && s.mark == seq && !ev.closed {
			l.lpos = i + 1
			return ev, f
		}
		l.skipped++
	}
	l.lpos = len(last)
	return nil, 0
}

// pickOthers is pickFd's walk of the round's first part, the events that did not run in the
// last round (Loop.order), all of which ran before those of the second. While its entries
// order[pos:unsorted] are out of order, the first pick of the round looks for the least
// recently run of them that is ready, without sorting: with WithFreshReadiness a round makes
// one pick only. A second pick sorts them (stable: ties, events that never ran, stay in the
// wait's order) and walks; the event the first pick ran has its slot used up, so the walk
// passes over it. nil: none of them is ready.
//
//go:noinline
func (l *Loop) pickOthers() (*FdEvent, Flags) {
	seq := l.waitSeq
	if l.unsorted > 0 {
		part := l.order[l.pos:]
		l.skipped += uint64(len(part))
		if !l.scanned {
			l.scanned = true
			var best *FdEvent
			var bestFlags Flags
			for _, ev := range part {
				s := ev.slot
				if f := s.ready & ev.flags; f != 0 && s.mark == seq && (best == nil || ev.lastRun < best.lastRun) {
					best, bestFlags = ev, f
				}
			}
			if best != nil {
				l.skipped--
				return best, bestFlags
			}
			l.pos = len(l.order) // none of them is ready any more
		} else {
			slices.SortStableFunc(part, func(a, b *FdEvent) int { return cmp.Compare(a.lastRun, b.lastRun) })
		}
		l.unsorted = 0
	}
	order := l.order
	for i := l.pos; i < len(order); i++ {
		ev := order[i]
		s := ev.slot
		if f := s.ready & ev.flags; f != 0 && s.mark == seq {
			l.pos = i + 1
			return ev, f
		}
		l.skipped++
	}
	l.pos = len(order)
	return nil, 0
}

// runFd runs ev's handler with flags f, using up its slot's readiness, and puts ev at the end
// of the next round's order (Loop.ran).
func (l *Loop) runFd(ev *FdEvent, f Flags) {
	l.dispatch++
	ev.lastRun = l.dispatch
	ev.slot.mark = l.waitSeq | markRan
	l.cacheLeft--
	l.ran = append(l.ran, ev)
	l.inside = true
	defer func() { l.inside = false }()
	ev.handler(ev, f)
}

// pollFlags is Read for POLLIN and Write for POLLOUT, without branches.
func pollFlags(revents uint32) Flags {
	return Flags(revents&unix.POLLIN) | Flags(revents&unix.POLLOUT)>>1
}

// rawIO is read(2) or write(2) (trap) of p on fd through rawsys.Syscall.
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	n, e := rawsys.Syscall(trap, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// epollLook is the epoll-based backends' look without blocking: epoll_wait(2) with timeout 0
// on epfd, written into buf's free capacity (readyFd is struct epoll_event). It cannot block,
// so it goes through rawsys.Syscall6, without the runtime's syscall bookkeeping. (epoll_pwait
// with no signal mask is epoll_wait, which arm64 lacks.) EINTR returns buf unchanged.
func epollLook(epfd int, buf []readyFd) ([]readyFd, error) {
	buf, free := epollRoom(buf)
	r, e := rawsys.Syscall6(sysEpollPwait, uintptr(epfd), uintptr(unsafe.Pointer(unsafe.SliceData(free))), uintptr(len(free)), 0, 0, 0)
	if e != 0 {
		return buf, epollError(e)
	}
	return buf[:len(buf)+int(r)], nil
}

// epollRoom returns buf with free capacity for at least 16 events, and that free capacity, for
// epoll_wait(2) to write into. (Callers convert free's address to uintptr in the syscall's
// own argument list, which keeps it valid for the call.)
func epollRoom(buf []readyFd) (grown, free []readyFd) {
	if cap(buf)-len(buf) < 16 {
		buf = growReady(buf)
	}
	return buf, buf[len(buf):cap(buf)]
}

// growReady returns buf with room for 64 more events.
//
//go:noinline
func growReady(buf []readyFd) []readyFd { return slices.Grow(buf, 64) }

// epollError is nil for EINTR (the caller returns what it has), else epoll_wait's error.
//
//go:noinline
func epollError(e unix.Errno) error {
	if e == unix.EINTR {
		return nil
	}
	return fmt.Errorf("ringev: epoll_wait: %w", e)
}

// adoptNews makes what the last handler's I/O found ready (l.cache, written by the backend's ride: rideIO) the
// readiness the next fd handlers run on, as a wait's would be. WithFreshReadiness uses no
// readiness from an earlier Once: there the news is dropped and the next wait looks.
func (l *Loop) adoptNews() error {
	l.news = false
	if l.fresh {
		l.cacheLeft = 0
		l.newsDrop = l.newsDrop[:0]
		return nil
	}
	l.busy = true
	err := l.markReady()
	if len(l.newsDrop) > 0 {
		l.unmarkDropped()
	}
	return err
}

// unmarkDropped makes the readiness the look found for the slots in newsDrop unusable.
//
//go:noinline
func (l *Loop) unmarkDropped() {
	for i, s := range l.newsDrop {
		if s.mark == l.waitSeq {
			s.mark = 0
			l.cacheLeft--
		}
		l.newsDrop[i] = nil
	}
	l.newsDrop = l.newsDrop[:0]
}

// dropNews is called when an fd event of slot s is added or closed after a handler's look
// (l.news): that look said nothing of a new event's fd, and the event's change may have been
// made after it. A look that found everything ready is dropped, so the next Once looks again;
// one that filled its buffer (more may be ready) stays, less what it found for s (s.mark = 0
// does the same for a wait's readiness): a new look would report the next fds, losing the
// fairness among them.
func (l *Loop) dropNews(s *fdSlot) {
	switch {
	case !l.news:
	case l.newsFull:
		l.newsDrop = append(l.newsDrop, s)
	default:
		l.dropAllNews()
	}
}

// dropAllNews forgets a handler's look: the cache holds what it found, unmarked, so nothing in
// it is usable.
func (l *Loop) dropAllNews() {
	l.news = false
	l.cacheLeft = 0
	clear(l.newsDrop)
	l.newsDrop = l.newsDrop[:0]
}

// rideIO is Loop.ReadNonblocking (trap SYS_READ) or WriteNonblocking (SYS_WRITE) on a backend
// that can carry the I/O with its next look at the fds (rider: uring). When the handler has used
// up the readiness the loop had (cacheLeft), so that the next Once would have to look at the
// fds (the caller checked mayRide: the loop's handler I/O takes the ring path, WithIOPath("ring"),
// ride.go), the backend makes the I/O and the look in one syscall
// (on uring: an SQE with RWF_NOWAIT, then an IORING_OP_EPOLL_WAIT on the set, in one
// io_uring_enter(2) that does not wait), so the handler gets its result and the loop its next
// readiness (l.news) from one syscall, where read(2) and the next Once's epoll_wait(2) make two.
// Otherwise (readiness left to serve, a look in flight already, WithFreshReadiness, which would
// not use the look, an fd the loop does not watch, an empty p) it is read(2) or write(2), which
// cost less than a trip through the ring, as it is before the backend's first look has
// completed (the first wait makes one; kernels before 6.15 have none). When the backend cannot
// ask without waiting (EOPNOTSUPP) read(2) or write(2) gives the answer. p is the kernel's
// until the backend's ride returns.
func (l *Loop) rideIO(trap uintptr, fd int, p []byte) (int, error) {
	b := l.ride
	if l.cacheLeft > 0 || l.news && l.newsFull || b.inflight || l.fresh || !b.worked || b.fallback ||
		len(p) == 0 || len(p) > maxRideLen || !l.watched(fd) {
		// No look to carry: the loop still has readiness to serve (in the cache, or found by
		// an earlier look that filled its buffer: more fds may be ready than it could say, and
		// a new look would report the next ones, losing the fairness among them; a look
		// that found everything ready is replaced by a newer one), or a look is in flight
		// already (it found nothing; the next blocking wait collects it), or, with
		// WithFreshReadiness, it would not be used.
		// Nor does I/O on an fd the loop does not watch go through the ring: a regular file's
		// position is not moved by an I/O the ring completes later (O_DIRECT). Nor an empty
		// one: the ring does not call a file's write for 0 bytes (eventfd's EINVAL).
		// read(2) and write(2) also cost less than a trip through the ring.
		return rawIO(trap, fd, p)
	}
	if l.news {
		l.dropAllNews() // an earlier handler I/O's look is older than this one
	}
	res, err := l.rider.ride(trap, fd, p)
	l.lookInFlight = b.inflight
	if b.found > 0 {
		l.takeLook(b)
	}
	if err != nil {
		return 0, rideError(err)
	}
	if res < 0 {
		if res == -int32(unix.EOPNOTSUPP) {
			// A file that cannot be asked without waiting (no NOWAIT support): read(2) or
			// write(2) gives what the package function would. (On an fd in the loop's epoll
			// set, a pipe, socket, ..., EAGAIN means what O_NONBLOCK's does.)
			return rawIO(trap, fd, p)
		}
		return 0, unix.Errno(-res)
	}
	return int(res), nil
}

// mayRide reports whether a handler's I/O through the loop's methods may go through rideIO: the
// backend can carry a look (ride != nil) and the I/O takes the ring path (WithIOPath("ring")).
// Otherwise, whatever rideIO's checks would find, the I/O is read(2) or write(2): the callers
// make it without a call of rideIO, so that the default path pays two loads and a compare for
// the ring it does not use (docs/design.md, "Where poll's lead in fd_speed1 goes"). Only the
// owner may call it (Close clears ride).
func (l *Loop) mayRide() bool {
	b := l.ride
	return b != nil && b.ringIO
}

// takeLook copies what the backend's look found (b.events[:b.found]) into l.cache as news. Once
// does not read the cache while a handler runs, and a ride happens only when the cache is used
// up, so a WithDispatchAll batch has nothing left in it either.
func (l *Loop) takeLook(b *rideState) {
	l.cache = l.cache[:copy(l.cache[:cap(l.cache)], b.events[:b.found])]
	l.news, l.newsFull = true, int(b.found) == len(b.events)
	b.found = 0
}

// watched reports whether fd is in the loop's epoll set (some fd event watches it), so that
// the kernel can poll it: a pipe, socket, eventfd, tty, ..., never a regular file.
func (l *Loop) watched(fd int) bool {
	return uint(fd) < uint(len(l.slots)) && l.slots[fd] != nil && l.slots[fd].interest != 0
}

// maxRideLen is the largest buffer rideIO sends through the ring: an SQE's length is 32 bits,
// and read(2) and write(2) move at most 0x7ffff000 bytes per call anyway (MAX_RW_COUNT).
const maxRideLen = 0x7ffff000

// rideError is the error of a failed io_uring_enter(2) in rideIO.
//
//go:noinline
func rideError(err error) error {
	return fmt.Errorf("ringev: uring backend: I/O through the ring: %w", err)
}

// yieldInterval is how often (ns) a loop that keeps blocking in short waits lets the Go scheduler
// run it anew (runtime.Gosched): half the runtime's forcePreemptNS (10 ms, runtime/proc.go).
const yieldInterval = 5_000_000

// yieldBeforeBlock lets the scheduler run the loop's goroutine anew once every yieldInterval,
// just before a blocking wait. The runtime's monitor (sysmon) counts a goroutine's time slice in
// scheduler runs, not in syscalls: a loop goroutine, locked to its thread, that goes from one
// short wait to the next never returns to the scheduler, so after 10 ms the monitor finds it in
// a syscall "too long", takes its P away and hands it off, and then, having done something, ticks
// every 20 µs for the next millisecond. That repeats every 10 ms, and the monitor's thread then
// costs a share of each request on every backend (docs/design.md, "The loop's time slice"). A
// Gosched of the locked goroutine costs two thread hand-offs, once every 5 ms.
//
// It yields only where that comes straight back (schedSamples.idle): with GOMAXPROCS 1 the monitor takes
// a P blocked in a syscall after 20 µs anyway, and with goroutines waiting for a P a Gosched puts
// the loop behind them for their whole time slice (10-20 ms beside a CPU-bound goroutine).
func (l *Loop) yieldBeforeBlock() {
	now := l.now()
	if now < l.yieldAt {
		return
	}
	if l.yieldAt != 0 && l.sched.idle() {
		runtime.Gosched()
		l.yields++
	}
	l.yieldAt = now + yieldInterval
}

// schedSamples reads the Go scheduler's state for yieldBeforeBlock (runtime/metrics, Go 1.26).
type schedSamples [3]metrics.Sample

// idle reports whether the scheduler has a P to spare and no goroutine waiting for one: more
// than one P, none of them holding a runnable goroutine, and fewer running goroutines than Ps.
// One runtime/metrics read (the scheduler's lock, a walk over the Ps); no allocation.
func (s *schedSamples) idle() bool {
	if s[0].Name == "" {
		s[0].Name = "/sched/gomaxprocs:threads"
		s[1].Name = "/sched/goroutines/runnable:goroutines"
		s[2].Name = "/sched/goroutines/running:goroutines"
	}
	metrics.Read(s[:])
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return false // a runtime without the metric: do not yield
		}
	}
	procs, runnable, running := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
	return procs > 1 && runnable == 0 && running < procs
}
