//go:build unix

package server

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// Loop is one of an Engine's loops: a ringev.Loop on its own OS thread, the connections it
// serves, and an inbox through which other goroutines reach them.
type Loop struct {
	e   *Engine
	hs  *handlers // the engine's (&e.hs): an accepted connection's Handler (Conn.handlers)
	idx int
	ev  *ringev.Loop // nil until the loop runs
	drv ioDriver
	pc  *PacketConn // ListenPacket's socket, or nil

	recvMode string // the requests driver's (RecvMultishot, RecvPerConn), else ""
	limit    int    // WithWriteLimit's
	maxPend  int64  // WithMaxPending's
	load     atomic.Int64
	rr       int // BalanceRoundRobin: the next loop (the first loop's goroutine only)

	// bufHeld is what the loop's connections hold, in bytes: their input and the output the
	// loop has taken (the loop's goroutine only); bufShown is bufHeld as the engine sees it,
	// stored when bufHeld has moved by heldStep from bufShowed, the loop's copy of it; bufAsync
	// is the output other goroutines wrote to them that the loop has not taken. The engine's
	// buffered bytes (WithMaxBuffered) are the sum of bufShown and bufAsync over its loops.
	// shedQueued: a shed is posted and has not run.
	bufHeld    int64
	bufShowed  int64
	bufShown   atomic.Int64
	bufAsync   atomic.Int64
	shedQueued atomic.Bool
	shedFn     func()

	// The inbox: what other goroutines queue for this loop, under mu. woken: a drain is
	// posted and has not taken the inbox yet; stopped: the loop has ended, nothing is taken
	// (set under mu; atomic for PauseRead's path that takes no lock).
	mu      sync.Mutex
	woken   bool
	stopped atomic.Bool
	inW     []asyncOut // bytes written to connections from other goroutines (Conn.asyncAt)
	wSpare  [][]byte   // buffers for inW's next entries
	inC     []closeReq
	inFd    []int
	inF     []func()   // posted functions; nil: the next of inQ's writes, in its turn
	inQ     []asyncOut // bytes written to connections from other goroutines behind inF's functions
	fwdWait []fwdWait  // sources Forward holds until their destination (one of this loop's) drains
	// funcs counts the functions queued (Post) and not yet run, those a drain took included:
	// while it is above 0, a write from another goroutine is queued as a function too, behind
	// them, so that a goroutine's Post then Write reach the connection in that order.
	funcs int
	// the drain's copies (the loop's goroutine), swapped with the above
	tkW     []asyncOut
	tkC     []closeReq
	tkFd    []int
	tkF     []func()
	tkQ     []asyncOut
	drainFn func() // l.drain, made once

	// The loop's goroutine only.
	conns       connTable
	view        inView               // the input of the OnData under way (Conn.serve)
	dials       map[*dialer]struct{} // Loop.Dial's under way
	dirty       []*Conn              // connections with output to hand to the kernel at the turn's end
	spare       []*Conn
	flushImm    *ringev.Immediate
	flushFn     func()
	flushQueued bool // flushImm is queued
	bufs        bufPool
	ins         []*inBuf    // spare input holders (takeIn)
	pipes       splicePipes // Conn.Splice's pipes
	lend        lender      // Forward's sends of the received buffer itself
	tlsScratch  []byte      // the plaintext crypto/tls returns (tlsBuf)
	aeads       []*recDir   // the TLS directions that hold an AEAD (aeadRing)
	aeadNext    int         // the next place in aeads
	aeadFree    []int32     // the places in aeads that ended directions freed
	epoch       time.Time
	draining    bool
	graceDone   bool
	drained     bool    // the drain has closed everything and stopped the loop (maybeDone)
	ended       []*Conn // connections whose socket is closed, for the turn's end (finished)
	// clock is the loop time (ns) read once in a turn, for the connections' activity and
	// request starts (turnTime); clockSet: it was read in this turn (the flush's end clears
	// it); flushing: flush is running.
	clock              int64
	clockSet, flushing bool
	dls                deadlines       // the connections' timeouts
	tos                []*connTimeouts // the connections' timeouts, shared (timeouts)
	lastTO             *connTimeouts   // the one of tos that timeouts returned last (SetTimeouts looks at it first)
	tick               *ringev.Timer
	shutdownFn         func()
	closeFn            func()
	// turns counts the flushes (ends of turns that had output); sends, the sends made (tests).
	turns, sends uint64
	// acceptPauses counts the accept pauses of the current episode of accept failing for lack of
	// fds or memory (acceptFailed); 0: accepting works.
	acceptPauses int
	// ringWakes and postWakes count the inbox's wake-ups from another loop (PostTo) and from
	// elsewhere (Post) (tests).
	ringWakes, postWakes atomic.Uint64
}

// closeReq is a Conn.Close or Conn.Abort from another goroutine, or an abort for reason (a
// write refused by the output cap).
type closeReq struct {
	c      *Conn
	abort  bool
	reason error
}

// run closes or aborts the connection, on the loop.
func (r closeReq) run() {
	if r.abort {
		r.c.abort(r.reason)
	} else {
		r.c.closeWith(nil, true)
	}
}

// queueClose queues r for the loop (under l.mu): behind the posted functions that wait, as
// writes are (writeAsync), so that a goroutine's Write then Close keep their order; else
// with the closes a drain takes after the writes.
func (l *Loop) queueClose(r closeReq) {
	if l.funcs > 0 {
		l.inF = append(l.inF, r.run)
		l.funcs++
		return
	}
	l.inC = append(l.inC, r)
}

// ioDriver is what a Loop asks of its I/O driver (conn_requests.go, conn_readiness.go).
type ioDriver interface {
	// start begins accepting on lfd (a listening socket the driver owns from now on), or
	// nothing for lfd < 0. Errors: the loop's, naming what the kernel lacks.
	start(lfd int) error
	// add starts serving a new connection (reading it).
	add(c *Conn)
	// update makes the connection's reading follow its state (paused, lingering, closing).
	update(c *Conn)
	// send hands c.pend to the kernel unless a send is under way.
	send(c *Conn)
	// linger shuts down the connection's writing side and reads until the peer closes or
	// lingerTimeout passes, then ends it.
	linger(c *Conn)
	// closeFd closes the connection's socket, cancelling its I/O, and then calls
	// Loop.finished.
	closeFd(c *Conn)
	// stopAccept stops accepting, after taking the connections in the backlog.
	stopAccept()
	// idle reports whether the driver has nothing left in the kernel (its listener closed).
	idle() bool
	// release frees what the driver holds for the loop (a buffer group).
	release()
	// abandon closes, at once, the fds that the driver closes through the loop's requests
	// (the listener, the connections' sockets, the splice pipes): the loop's Run has ended on
	// an error, and none of its requests completes any more.
	abandon()
}

// newLoop makes the engine's loop idx (not yet running).
func newLoop(e *Engine, idx int) *Loop {
	l := &Loop{e: e, hs: &e.hs, idx: idx, limit: e.o.writeLimit, maxPend: int64(e.o.maxPending)}
	l.drainFn, l.flushFn, l.shedFn = l.drain, l.flush, l.shed
	l.shutdownFn, l.closeFn = l.shutdown, l.closeAll
	return l
}

// run is the loop's goroutine: it makes the ringev loop (which locks the goroutine to its OS
// thread) and reports to made; once go is closed (every loop is made) it starts the driver on
// lfd, reports to started, and runs until the loop is done. A closed abort instead of go: the
// engine failed to start.
func (l *Loop) run(lfd int, made chan<- error, start <-chan bool, started chan<- error) {
	e := l.e
	defer e.wg.Done()
	if e.tls != nil {
		defer e.tls.loopEnded()
	}
	opts := append([]ringev.Option{ringev.WithBackend(e.o.backend), ringev.WithDispatchAll()}, e.o.loopOptions...)
	ev, err := ringev.New(opts...)
	if err != nil {
		if lfd >= 0 {
			unix.Close(lfd)
		}
		l.stop()
		made <- err
		return
	}
	l.epoch = time.Now()
	l.ev = ev
	made <- nil
	if !<-start {
		if lfd >= 0 {
			unix.Close(lfd)
		}
		l.stop()
		ev.Close()
		return
	}
	if e.ph != nil {
		err = l.startPacket(lfd)
	} else {
		err = l.startStream(lfd)
	}
	if err == nil && lfd < 0 {
		// A loop with nothing to wait for yet (no listener: it is handed connections) must
		// not end: an fd that never becomes ready keeps it until maybeDone stops it. Not a
		// timer: with one pending, every wait of the loop computes a deadline.
		err = l.keepAlive()
	}
	if err != nil {
		l.stop()
		ev.Close()
		started <- err
		return
	}
	started <- nil
	if e.onTick != nil {
		l.ticked(nil)
	}
	if err := ev.Run(); err != nil {
		e.loopErr(l.idx, err)
		l.abandon()
	} else if !l.drained {
		l.abandon() // stopped underneath (EventLoop().Stop): the drain did not close what it holds
	}
	l.stop()
	if err := ev.Close(); err != nil {
		e.loopErr(l.idx, err)
	}
}

// abandon closes what the loop holds when its Run ended on an error, or was stopped underneath
// (ringev.Loop.Stop), not through the drain
// (maybeDone) that closes it with the loop's requests: the dials' sockets and the driver's
// (abandon). ev.Close closes the fds watched with AutoClose. No handler is called: the loop
// that would run them has ended; Engine.Wait gives the error.
func (l *Loop) abandon() {
	for d := range l.dials {
		if d.fd >= 0 {
			unix.Close(d.fd)
			d.fd = -1
		}
	}
	if l.drv != nil {
		l.drv.abandon()
	}
}

// keepAlive watches an eventfd that is never written (closed with the loop), so that the loop
// waits while it has nothing else to wait for. Errors: eventfd(2)'s, or the loop's AddFd's.
func (l *Loop) keepAlive() error {
	fd, err := eventfd()
	if err != nil {
		return fmt.Errorf("server: eventfd for loop %d: %w", l.idx, err)
	}
	ev, err := l.ev.AddFd(fd, ringev.Read, func(*ringev.FdEvent, ringev.Flags) {})
	if err != nil {
		unix.Close(fd)
		return err
	}
	ev.SetAutoClose(true)
	return nil
}

// startStream makes the connection driver and starts it on lfd.
func (l *Loop) startStream(lfd int) error {
	if l.e.o.api == APIReadiness {
		l.drv = newConnRdy(l)
	} else {
		d, err := newConnReqs(l)
		if err != nil {
			if lfd >= 0 {
				unix.Close(lfd)
			}
			return err
		}
		l.drv, l.recvMode = d, d.recvMode()
	}
	return l.drv.start(lfd)
}

// stop ends the inbox: what is queued now is taken here (handed-off sockets closed, posted
// functions run, writes dropped) and every later call fails with net.ErrClosed or ErrClosed.
func (l *Loop) stop() {
	l.mu.Lock()
	l.stopped.Store(true)
	fds, fns, qs := l.inFd, l.inF, l.inQ
	for _, e := range l.inW { // dropped: they count no more
		e.c.asyncAt.Store(0)
		e.c.outN.Add(-int64(len(e.b)))
		l.bufAsync.Add(-int64(len(e.b)))
	}
	l.inFd, l.inF, l.inQ, l.inW, l.inC = nil, nil, nil, nil, nil
	l.mu.Unlock()
	for _, fd := range fds {
		unix.Close(fd)
		l.load.Add(-1)
	}
	runQueued(fns, qs)
}

// runQueued runs what the inbox queued behind posted functions, on the loop, in order: each
// function of fns, and for each nil one the next of qs's writes (takeQueued). It clears fns
// and qs (their entries hold functions and buffers).
func runQueued(fns []func(), qs []asyncOut) {
	q := 0
	for i, f := range fns {
		fns[i] = nil
		if f != nil {
			f()
			continue
		}
		e := qs[q]
		qs[q] = asyncOut{}
		q++
		e.c.takeQueued(e.b)
	}
}

// Index is the loop's position in Engine.Loops.
func (l *Loop) Index() int { return l.idx }

// Engine is the engine the loop belongs to.
func (l *Loop) Engine() *Engine { return l.e }

// Conns is the number of connections open on the loop. Safe from any goroutine.
func (l *Loop) Conns() int { return int(l.load.Load()) }

// EventLoop is the ringev loop underneath, for what the connection layer does not cover
// (timers, requests, fd events of one's own). Its methods but Post, PostTo and Stop belong to
// the loop's goroutine: call them from a handler or a function given to Post.
func (l *Loop) EventLoop() *ringev.Loop { return l.ev }

// Post queues f to run on the loop's goroutine, after what was queued before it from the same
// goroutine (writes included: Conn.Write then Post runs f after the bytes are in the
// connection's output) and before what is queued after it (Post then Conn.Write: the bytes
// follow what f writes; a Close, CloseWrite or Abort is queued behind them too). A close
// queued behind f, from any goroutine, takes the connection when the loop runs it: f's writes
// succeed and are sent first. What other goroutines queue is ordered with the loop's own work
// only so (see Conn.Write): a handler's write is not held behind a write waiting behind f. It
// is safe from any goroutine; from another loop of the engine
// it wakes this one through the ring (ringev.Loop.PostTo: IORING_OP_MSG_RING on uring). It returns
// ringev.ErrClosed once the loop has ended (f will not run) and ringev.ErrNilFunc for a nil f.
func (l *Loop) Post(f func()) error {
	if f == nil {
		return ringev.ErrNilFunc
	}
	l.mu.Lock()
	if l.stopped.Load() {
		l.mu.Unlock()
		return ringev.ErrClosed
	}
	l.postLocked(f)
	return nil
}

// postLocked is Post under l.mu, of a running loop; it unlocks l.mu.
func (l *Loop) postLocked(f func()) {
	l.inF = append(l.inF, f)
	l.funcs++
	l.wakeLocked()
}

// wakeLocked makes sure a drain of the inbox is queued on the loop, and unlocks l.mu. The
// caller holds l.mu, and l is running.
func (l *Loop) wakeLocked() {
	if l.woken {
		l.mu.Unlock()
		return
	}
	l.woken = true
	l.mu.Unlock()
	var err error
	if from := l.e.current(); from != nil && from != l && !l.e.o.noMsgRing {
		l.ringWakes.Add(1)
		err = from.ev.PostTo(l.ev, l.drainFn)
	} else {
		l.postWakes.Add(1)
		err = l.ev.Post(l.drainFn)
	}
	if err != nil {
		// The ringev loop has closed: l.stop has taken (or is taking) the inbox.
		l.e.logf("loop %d: waking it: %v", l.idx, err)
	}
}

// drain takes the inbox on the loop's goroutine: bytes written to connections from other
// goroutines join their output, then the closes, the sockets handed over, the functions.
func (l *Loop) drain() {
	l.clockSet = false // a posted function runs in a turn of its own (see turnTime)
	l.mu.Lock()
	l.woken = false
	l.tkW, l.inW = l.inW, l.tkW[:0]
	l.tkC, l.inC = l.inC, l.tkC[:0]
	l.tkFd, l.inFd = l.inFd, l.tkFd[:0]
	l.tkF, l.inF = l.inF, l.tkF[:0]
	l.tkQ, l.inQ = l.inQ, l.tkQ[:0]
	taken := 0
	for i, e := range l.tkW {
		n, b := e.c.takeAsync(e.b)
		taken += n
		l.putSpareW(b)
		l.tkW[i] = asyncOut{}
	}
	l.mu.Unlock()
	l.charge(taken)
	for i, r := range l.tkC {
		l.tkC[i] = closeReq{}
		r.run()
	}
	for _, fd := range l.tkFd {
		l.addConn(fd, true)
	}
	runQueued(l.tkF, l.tkQ)
	if len(l.tkF) > 0 {
		l.mu.Lock()
		l.funcs -= len(l.tkF)
		l.mu.Unlock()
	}
}

// handOff queues an accepted socket for l (from the first loop's goroutine, src), counted in
// l.load already.
func (l *Loop) handOff(fd int) {
	l.mu.Lock()
	if l.stopped.Load() {
		l.mu.Unlock()
		unix.Close(fd)
		l.load.Add(-1)
		return
	}
	l.inFd = append(l.inFd, fd)
	l.wakeLocked()
}

// acceptPause is how long a driver stops accepting after accept failed for lack of fds or
// memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): the connections wait in the listener's backlog, and
// retrying at once would spin.
const acceptPause = 100 * time.Millisecond

// acceptFailed is what a driver calls when accept failed with err for lack of fds or memory and
// it pauses accepting for acceptPause. Only the first pause of an episode is logged: while fds
// are short every retry fails again, which would be a line every acceptPause. The episode ends
// at the next connection accepted (accepted logs it, with its count of pauses).
func (l *Loop) acceptFailed(err error) {
	if l.acceptPauses == 0 {
		l.e.logf("accept: %v; pausing accept, retrying every %v until it succeeds", err, acceptPause)
	}
	l.acceptPauses++
}

// accepted is what a driver calls with a socket its listener accepted: the connection is
// served here (BalanceReusePort) or handed to the loop the balancing picks.
func (l *Loop) accepted(fd int) {
	if l.acceptPauses != 0 {
		l.e.logf("accept: accepting again after %d pauses", l.acceptPauses)
		l.acceptPauses = 0
	}
	if l.e.o.balance == BalanceReusePort || len(l.e.loops) == 1 {
		l.addConn(fd, false)
		return
	}
	to := l.e.pick(l)
	if to == l {
		l.addConn(fd, true)
		return
	}
	to.handOff(fd)
}

// addConn starts serving socket fd; counted: it is in l.load already (a hand-off).
func (l *Loop) addConn(fd int, counted bool) {
	if !counted {
		l.load.Add(1)
	}
	c := l.newConn(fd, l.hs)
	if cfg := l.e.o.tls; cfg != nil {
		c.x().tls = newTLSConn(c, false, cfg)
	}
	l.open(c, nil)
}

// newConn makes the connection of socket fd, served by hs, and counts it among the loop's.
func (l *Loop) newConn(fd int, hs *handlers) *Conn {
	c := &Conn{l: l, fd: int32(fd), to: l.timeouts(nil, l.e.o.idle, l.e.o.request, l.e.o.readIdle), bp: l.e.o.bp}
	if l.e.o.halfOpen {
		c.fl = cfHalfOpen
	}
	if hs != l.hs {
		c.fl |= cfDialed
		c.x().hs = hs
	}
	l.conns.add(c)
	return c
}

// open starts serving c: its timers, its reading, then dialed (a dial's, told of the open
// connection before OnOpen) and OnOpen.
func (l *Loop) open(c *Conn, dialed func(*Conn, error)) {
	if t := c.to; t != nil && (t.idle > 0 || t.rIdle > 0) {
		c.active = l.now()
		c.ractive = c.active
		for _, d := range [2]time.Duration{t.idle, t.rIdle} {
			if d > 0 {
				c.armTimer(c.active + int64(d)) // the earlier one stays
			}
		}
	}
	l.drv.add(c)
	if c.closed {
		if dialed != nil {
			dialed(nil, c.closeReason())
		}
		return
	}
	c.life |= lifeOpened
	if dialed != nil {
		dialed(c, nil)
	}
	if o := c.handlers().open; o != nil {
		o.OnOpen(c)
	}
	if t := c.tlsOf(); t != nil {
		t.start()
	}
	if l.draining && l.graceDone {
		c.closeWith(ErrShutdown, false)
	}
}

// finished is the end of a connection whose socket is closed: OnClose, and its buffers go back.
func (l *Loop) finished(c *Conn) {
	if c.life&lifeDone != 0 {
		return
	}
	c.life |= lifeDone
	l.conns.remove(c)
	l.load.Add(-1)
	l.dropDeadline(c)
	if cl := c.handlers().close; cl != nil && c.life&lifeOpened != 0 {
		cl.OnClose(c, c.closeReason())
	}
	c.inData = false
	if !c.inData {
		c.dropInput()
	}
	l.bufs.put(c.pend)
	c.pend = nil
	l.maybeDone()
}

// finishLater is finished at the turn's end, for a driver whose close is immediate: OnClose
// never runs inside another handler call.
func (l *Loop) finishLater(c *Conn) {
	l.ended = append(l.ended, c)
	l.schedule()
}

// markDirty puts c on the list the turn's end flushes.
func (l *Loop) markDirty(c *Conn) {
	c.dirty = true
	l.dirty = append(l.dirty, c)
	if !l.flushQueued {
		l.schedule()
	}
}

// schedule queues the turn's end (flush) if it is not queued.
func (l *Loop) schedule() {
	if l.flushQueued {
		return
	}
	l.flushQueued = true
	if l.flushImm == nil {
		l.flushImm = l.ev.AddImmediate(l.flushFn)
	} else {
		l.flushImm.Schedule()
	}
}

// flush is the turn's end: each connection with output makes one send, closing ones with
// nothing left to send start their lingering close, and those past the write limit pause.
func (l *Loop) flush() {
	l.flushQueued, l.flushing = false, true
	l.turns++
	list := l.dirty
	l.dirty, l.spare = l.spare[:0], nil
	for i, c := range list {
		list[i] = nil
		c.dirty = false
		if !c.closed {
			if t := c.tlsOf(); t != nil {
				t.seal() // the turn's plaintext becomes records in c.pend
			}
			// Past the write limit, reading pauses before the send: a send that takes the
			// whole output at once (readiness) then resumes it, and OnData is given what it
			// left, as it is when a later send drains the output.
			if c.outputWork() {
				c.outputChanged()
			}
			if len(c.pend) > 0 && !c.closed {
				if c.to.idles() {
					c.active = l.turnTime() // sending is activity (see sentSome)
				}
				l.drv.send(c)
			}
		}
	}
	l.spare = list[:0]
	if l.pc != nil && l.pc.dirty {
		l.pc.flush()
	}
	if len(l.ended) > 0 {
		ended := l.ended
		l.ended = nil // OnClose may end others: they wait for the next flush
		for _, c := range ended {
			l.finished(c)
		}
	}
	l.flushing, l.clockSet = false, false
}

// heldStep is how far, in bytes, what a loop's connections hold moves before the engine is
// shown it (Loop.charge): the engine's count of its buffered bytes is off by at most this much
// per loop, and a connection whose traffic is smaller never touches a shared counter.
const heldStep = 64 << 10

// charge adds n bytes (n < 0: takes them off) to what the loop's connections hold, and shows
// the engine the count once it has moved by heldStep; past the engine's budget, the engine
// sheds (Engine.overBudget). The common case, a move within heldStep, costs an add and two
// compares (it is inlined).
func (l *Loop) charge(n int) {
	l.bufHeld += int64(n)
	if uint64(l.bufHeld-l.bufShowed+heldStep) > 2*heldStep {
		l.show()
	}
}

// show is charge's work when the count has moved by heldStep.
func (l *Loop) show() {
	grew := l.bufHeld > l.bufShowed
	l.bufShowed = l.bufHeld
	l.bufShown.Store(l.bufHeld)
	if grew && l.e.buffered() > int64(l.e.o.maxBuffered) {
		l.e.overBudget()
	}
}

// shed closes connections of the loop that hold the most, largest first, while the engine
// holds more than its budget (WithMaxBuffered): each is aborted (its output dropped, the peer
// reset), OnClose's err is ErrEngineFull, and WithLogf's function is told. A connection that
// holds no more than an even share of the budget (the budget over the engine's connections)
// is never shed: over the budget, some connection holds more.
func (l *Loop) shed() {
	l.shedQueued.Store(false)
	e := l.e
	l.bufShowed = l.bufHeld
	l.bufShown.Store(l.bufHeld)
	budget := int64(e.o.maxBuffered)
	for {
		total := e.buffered()
		if total <= budget {
			return
		}
		share := budget / int64(max(1, e.Conns()))
		var worst *Conn
		most := share
		for _, c := range l.conns.all {
			if c == nil {
				continue
			}
			if h := c.outN.Load() + int64(len(c.inBytes())); h > most && !c.closed {
				worst, most = c, h
			}
		}
		if worst == nil {
			return
		}
		e.logf("the engine holds %d bytes, past its budget of %d: closing a connection that holds %d", total, budget, most)
		worst.setGone()
		worst.abort(ErrEngineFull)
		l.bufShowed = l.bufHeld
		l.bufShown.Store(l.bufHeld)
	}
}

// takeIn returns a spare input holder (Conn.in) with an empty buffer, or a new one.
func (l *Loop) takeIn() *inBuf {
	h, ok := pop(&l.ins)
	if !ok {
		h = new(inBuf)
	}
	h.b = l.bufs.get()
	return h
}

// pop takes the last element of a free list, if it has one.
func pop[T any](s *[]T) (x T, ok bool) {
	n := len(*s)
	if n == 0 {
		return x, false
	}
	x = (*s)[n-1]
	var zero T
	(*s)[n-1] = zero
	*s = (*s)[:n-1]
	return x, true
}

// putIn gives an input holder and its buffer back: the buffer to the free list, the holder to
// the spares (at most freeBufs of them).
func (l *Loop) putIn(h *inBuf) {
	l.bufs.put(h.b)
	h.b = nil
	if len(l.ins) < freeBufs {
		l.ins = append(l.ins, h)
	}
}

// bufPool is a loop's free list of output and leftover-input buffers (len 0), so that a busy
// connection allocates none per request and an idle one holds none.
type bufPool struct{ free [][]byte }

// newBufCap is the capacity of the buffers bufPool makes, in bytes (4 KiB, one page): a
// request-response protocol's reply fits, and each buffer in the free list (as many as there
// were sends in flight at once) holds one page of memory, not four. Output past it grows the
// buffer by append, and put keeps the grown buffer (up to freeBufCap).
const newBufCap = 4 << 10

// get returns an empty buffer from the free list (or a new one of newBufCap).
func (p *bufPool) get() []byte {
	if b, ok := pop(&p.free); ok {
		return b
	}
	return make([]byte, 0, newBufCap)
}

// put gives b back to the free list, unless it grew past freeBufCap or the list is full.
func (p *bufPool) put(b []byte) {
	if b != nil && cap(b) <= freeBufCap && len(p.free) < freeBufs {
		p.free = append(p.free, b[:0])
	}
}

// now is the loop's clock: ns since the loop started (monotonic).
func (l *Loop) now() int64 { return int64(time.Since(l.epoch)) }

// turnTime is now as read once in the loop's turn: the time of the connections' activity, for
// their idle timeouts. A clock read per turn rather than two per request (a receive and a send)
// matters: each is a vDSO call on the hot path. The turn's end (flush, which reading the
// clock schedules) makes the next turn read it anew, and so do the layer's timers and posted
// functions, which run in turns of their own: the fds' turn can come before a scheduled flush
// only after FdStarvationLimit such turns. (A request's start, which a client can play with,
// reads the clock itself.)
func (l *Loop) turnTime() int64 {
	if l.clockSet {
		return l.clock
	}
	return l.readClock()
}

// readClock is turnTime's first read in a turn (out of line: turnTime is inlined).
func (l *Loop) readClock() int64 {
	l.clock, l.clockSet = l.now(), true
	if !l.flushing {
		l.schedule()
	}
	return l.clock
}

// ticked calls the TickHandler and sets the timer for its next call.
func (l *Loop) ticked(*ringev.Timer) {
	l.tick = nil
	if next := l.e.onTick.OnTick(l); next > 0 && !l.draining {
		l.tick = l.ev.AddTimer(next, l.ticked)
	}
}

// shutdown stops accepting and drains the loop's connections (Engine.Shutdown); the loop stops
// once none is left.
func (l *Loop) shutdown() {
	if l.draining {
		return
	}
	l.draining = true
	l.cancelDials()
	if l.tick != nil {
		l.tick.Stop()
		l.tick = nil
	}
	if l.pc != nil {
		l.pc.shutdown()
		l.graceDone = true
		l.maybeDone()
		return
	}
	l.drv.stopAccept()
	l.ev.AddTimer(drainGrace, func(*ringev.Timer) {
		l.graceDone = true
		for _, c := range l.conns.all {
			if c == nil {
				continue
			}
			if sh := c.handlers().shut; sh != nil && c.life&lifeOpened != 0 && !c.closing && !c.closed && sh.OnShutdown(c) {
				continue // the handler closes it once its request is served
			}
			c.closeWith(ErrShutdown, false)
		}
		l.maybeDone()
	})
}

// closeAll closes every connection at once (Engine.Close), after stopping accepting.
func (l *Loop) closeAll() {
	l.shutdown()
	l.graceDone = true
	for _, c := range l.conns.all {
		if c != nil {
			c.abort(ErrShutdown)
		}
	}
	if l.pc != nil {
		l.pc.closeNow()
	}
	l.maybeDone()
}

// maybeDone stops the loop once a drain has closed every connection and the listener.
func (l *Loop) maybeDone() {
	if !l.draining || !l.graceDone || l.conns.n > 0 || len(l.dials) > 0 {
		return
	}
	if l.pc != nil && !l.pc.idle() {
		return
	}
	if l.drv != nil && !l.drv.idle() {
		return
	}
	if l.drv != nil {
		l.drv.release()
	}
	l.drained = true
	l.ev.Stop()
}

// errNotOwner is the error of a Conn method that belongs to its loop's goroutine, called from
// another.
func errNotOwner(what string) error {
	return fmt.Errorf("server: Conn.%s from a goroutine other than its loop's: %w", what, ringev.ErrNotOwner)
}

// connTable is a loop's connections, each in a slot of all (Conn.slot) from newConn to
// finished: a connection costs the table a pointer, not a map entry, and its slot names it in
// its requests' tokens (connReqs.onIO).
type connTable struct {
	all  []*Conn // nil: a free slot
	free []int32 // the free slots
	n    int     // the connections in all
	seq  uint32  // the sequence number of the last connection added, as Conn.seq holds it
}

// add gives c a slot and a sequence number.
func (t *connTable) add(c *Conn) {
	t.seq += 1 << tokBits // (the token's bits: see Conn.seq)
	c.seq = t.seq
	if k := len(t.free); k > 0 {
		c.slot, t.free = t.free[k-1], t.free[:k-1]
		t.all[c.slot] = c
	} else {
		c.slot = int32(len(t.all))
		t.all = append(roomFor1(t.all), c)
	}
	t.n++
}

// remove frees c's slot.
func (t *connTable) remove(c *Conn) {
	t.all[c.slot] = nil
	t.free = append(t.free, c.slot)
	t.n--
}

// roomFor1 returns s with room for one more element: s itself, or a copy with twice its
// capacity. A table of the connections that grows one entry at a time with append's growth
// (a quarter more, past 256 entries) leaves about four times its final size behind as garbage
// on the way, which stays in the process's memory until the next collection; doubling leaves
// once its size.
func roomFor1[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, len(s)+16)
}

// inView is the input an OnData call sees: its connection's unconsumed input or bytes received
// and not yet copied (b), and what the handler has discarded of it (off). One OnData runs at a
// time on a loop, so the loop holds it, not every connection; c is nil while none runs (serve:
// one that runs inside another's keeps that one's view aside).
type inView struct {
	c    *Conn
	b    []byte
	off  int
	part bool // more input waits after b (serveLeft's pieces): EOF is not told yet
}

// asyncOut is an entry of Loop.inW: bytes other goroutines wrote to c, in order; or of
// Loop.inQ: bytes they wrote to c while functions were queued (writeAsync), which join its
// output in their turn (takeQueued), after the functions before them. Consecutive writes to one
// connection share an entry, so that a write queued so allocates nothing once the entry's
// buffer has grown.
type asyncOut struct {
	c *Conn
	b []byte
}

// Bounds of the loop's spare buffers for what other goroutines write (Loop.wSpare): how many,
// and the largest kept (a larger one goes to the garbage collector).
const (
	maxSpareW     = 64
	maxSpareWSize = 64 << 10
)

// spareW returns a buffer for a new entry of inW (under l.mu): a spare, else nil.
func (l *Loop) spareW() []byte {
	k := len(l.wSpare)
	if k == 0 {
		return nil
	}
	b := l.wSpare[k-1]
	l.wSpare[k-1] = nil
	l.wSpare = l.wSpare[:k-1]
	return b
}

// putSpareW keeps b, emptied, for a later entry of inW (under l.mu), within the bounds.
func (l *Loop) putSpareW(b []byte) {
	if cap(b) > 0 && cap(b) <= maxSpareWSize && len(l.wSpare) < maxSpareW {
		l.wSpare = append(l.wSpare, b[:0])
	}
}
