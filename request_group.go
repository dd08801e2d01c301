//go:build unix

package ringev

// Buffer groups: buffers a RecvMultishot receives into, the kernel (or the emulation) picking
// one per completion.

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BufferGroup is a group of equal buffers that a RecvMultishot receives into, the kernel
// picking one per completion: a provided buffer ring on uring (IORING_REGISTER_PBUF_RING,
// Linux 5.19; io_uring_register_buf_ring(3)), with incremental consumption where the kernel
// has it (IOU_PBUF_RING_INC, 6.12: completions share a buffer, each with its own slice; see
// Incremental), a free list in the emulation. Each completion
// holds one buffer until it is released (Completion.ReleaseBuffer or Release). When every
// buffer is held, a RecvMultishot gets ENOBUFS (More set: no data is lost, it stays in the
// socket) and the loop re-arms it when a buffer is released. A group belongs to its loop's
// goroutine.
//
// Fairness: requests whose receive ran dry wait in one queue, in the order they ran dry, and the
// loop gives them their turns from its head as buffers come back: a turn is one receive into one
// buffer (on uring an IORING_OP_RECV with IOSQE_BUFFER_SELECT and MSG_DONTWAIT, not a multishot,
// which would take every free buffer), after which the request goes to the back of the queue. A
// request goes back to multishot receives when no other request of the group waits for a buffer,
// or when its socket had no data at its turn. So connections that flood a small group each get
// their share, on every backend.
//
// A backend makes each group inside a struct of its own that adds its side (reqDriver.newGroup:
// ringGroup on uring, emulGroup in the emulation).
type BufferGroup struct {
	l       *Loop
	bgid    uint16
	size    int
	n       int
	slab    []byte
	avail   int       // buffers the kernel (or the emulation) can pick
	parked  []*reqRec // RecvMultishots waiting for their turn, in order from phead (see pump)
	phead   int
	turns   int  // turns in flight: one-buffer receives pump started, not completed yet
	pumping bool // pump is running (a turn that the emulation completes at once calls it again)
	closed  bool
	inc     bool       // incremental consumption (IOU_PBUF_RING_INC)
	bufs    []bufState // per buffer (one slice: one bounds check, one cache line)
}

// bufState is a group buffer's state on the loop's side.
type bufState struct {
	off  int32 // bytes the kernel used so far (incremental consumption)
	refs int32 // completions holding a view of it, not released yet
	out  bool  // the kernel is done with it (it comes back when refs is 0)
}

// take records that a completion holds n bytes of buffer bid (more: the kernel goes on
// filling it, compBufMore) and returns where they start in it.
func (g *BufferGroup) take(bid int, n int32, more bool) int32 {
	if uint(bid) >= uint(len(g.bufs)) {
		return 0
	}
	b := &g.bufs[bid]
	off := b.off
	b.refs++
	if more {
		b.off += n
	} else {
		b.off, b.out = 0, true
		g.avail--
	}
	return off
}

// Incremental reports whether the group's buffers are consumed incrementally: several
// completions share one buffer, one after the other (IOU_PBUF_RING_INC, Linux 6.12, on the
// uring backend where the kernel has it).
func (g *BufferGroup) Incremental() bool { return g.inc }

// NewBufferGroup makes a group of n buffers (a power of two, at most 32768) of size bytes
// each. Errors: ErrNotOwner, ErrClosed, one wrapping unix.EINVAL for a bad n or size, one
// wrapping unix.ENOSPC when 65,536 groups are open (a group ID is 16 bits; the ID of a closed
// group is given again only after every other free one), and on uring the register error (naming IORING_REGISTER_PBUF_RING, 5.19, when the kernel lacks it).
func (l *Loop) NewBufferGroup(n, size int) (*BufferGroup, error) {
	if !l.owned() {
		return nil, ErrNotOwner
	}
	if l.closed {
		return nil, ErrClosed
	}
	if n <= 0 || n > 32768 || n&(n-1) != 0 || size <= 0 || size > 1<<30 {
		return nil, fmt.Errorf("ringev: NewBufferGroup(%d, %d): want a power of two <= 32768 buffers of 1 byte to 1 GiB: %w", n, size, unix.EINVAL)
	}
	rq := l.reqs()
	if !rq.nextGroupID() {
		return nil, fmt.Errorf("ringev: NewBufferGroup: all 65536 buffer group IDs are held by open groups: %w", unix.ENOSPC)
	}
	g, err := rq.drv.newGroup(rq.bgid, n, size)
	if err != nil {
		return nil, err
	}
	rq.groups = append(rq.groups, g)
	g.avail = n
	return g, nil
}

// initGroup fills in the core's part of g, a new group of n buffers of size bytes with ID
// bgid: reqDriver.newGroup's first step.
func (l *Loop) initGroup(g *BufferGroup, bgid uint16, n, size int) {
	*g = BufferGroup{l: l, bgid: bgid, size: size, n: n, slab: make([]byte, n*size),
		bufs: make([]bufState, n)}
}

// nextGroupID advances rq.bgid to the next buffer group ID that no open group holds: the IDs
// are 16 bits, and a loop that makes and closes a group per connection wraps them while a
// long-lived group still holds its ID (registering it again fails with EEXIST). It keeps
// counting up rather than taking the lowest free ID, so that a closed group's ID comes back as
// late as possible. It reports false when all 65,536 IDs are held.
func (rq *requests) nextGroupID() bool {
	if len(rq.groups) >= 1<<16 {
		return false
	}
	for {
		rq.bgid++
		used := false
		for _, g := range rq.groups {
			if g.bgid == rq.bgid {
				used = true
				break
			}
		}
		if !used {
			return true
		}
	}
}

// buf returns the view of buffer bid holding n bytes.
func (g *BufferGroup) buf(bid, n int) []byte {
	o := bid * g.size
	return g.slab[o : o+n : o+g.size]
}

// view returns the n bytes at offset off of buffer bid, a completion's (the kernel keeps them
// in the buffer), with capacity n: built from its parts after one compare that keeps them in
// the slab, where slicing made four checks (a completion's callback pays them all).
func (g *BufferGroup) view(bid, off int32, n int) []byte {
	o := int(bid)*g.size + int(off)
	if uint(o)+uint(n) > uint(len(g.slab)) || bid < 0 || off < 0 {
		return g.slab[o:][:n:n] // (panics, as slicing does)
	}
	h := bufHeader{unsafe.Add(unsafe.Pointer(unsafe.SliceData(g.slab)), o), n, n}
	return *(*[]byte)(unsafe.Pointer(&h))
}

// Len returns the number of buffers, Size the bytes of each.
func (g *BufferGroup) Len() int { return g.n }

// Size returns the bytes of each buffer.
func (g *BufferGroup) Size() int { return g.size }

// Release gives back one completion's hold on buffer id (Completion.BufferID): the buffer goes
// back to the kernel once no completion holds it and the kernel is done with it (with
// incremental consumption, several completions share a buffer), and a RecvMultishot waiting for
// a buffer gets its turn (see BufferGroup). Release each completion's buffer once; releasing a buffer no
// completion holds, an out-of-range id, and a release after the group's or the loop's Close
// are ignored. It is safe from any goroutine: from one that does not own the loop the release
// is posted to the loop, as Post does.
func (g *BufferGroup) Release(id int) {
	if !g.l.owned() {
		g.releaseLater(id)
		return
	}
	if uint(id) >= uint(len(g.bufs)) || g.closed || g.l.closed {
		return
	}
	if b := &g.bufs[id]; b.refs > 0 {
		if b.refs--; b.refs == 0 && b.out {
			g.back(id)
		}
	}
}

// releaseOwned is Release for package server (internal/onloop.Release), whose caller runs on
// the loop's goroutine already (it runs in one of the loop's callbacks): Release without its
// check of the caller (and its body written out again, not called from Release: the body is
// past the inliner's budget, and a call would cost Release's callers). Code outside this
// module cannot reach it.
func (g *BufferGroup) releaseOwned(id int) {
	if uint(id) < uint(len(g.bufs)) && !g.closed && !g.l.closed {
		if b := &g.bufs[id]; b.refs > 0 {
			if b.refs--; b.refs == 0 && b.out {
				g.back(id)
			}
		}
	}
}

// releaseLater is Release from a goroutine that does not own the loop: posted to the loop.
//
//go:noinline
func (g *BufferGroup) releaseLater(id int) {
	g.l.Post(func() { g.Release(id) }) // ErrClosed: the loop has let go of its groups
}

// back gives buffer id, which no completion holds and the kernel is done with, back to the
// kernel (Release's last part), and lets a RecvMultishot waiting for a buffer have its turn.
func (g *BufferGroup) back(id int) {
	g.bufs[id].out = false
	g.l.req.drv.provide(g, id)
	g.avail++
	if g.phead < len(g.parked) {
		g.pump()
	}
}

// unused takes back the buffer of a receive's end that put nothing in it (its result an error,
// its completion flags with compBuffer): Linux 6.1 ends a turn that finds the socket empty
// with -EAGAIN and the buffer it picked, used up. The buffer goes back to the kernel as after a
// Release, else the kernel's ring holds one buffer fewer than avail counts, and every turn
// after gets ENOBUFS from a ring the loop thinks has a buffer: the loop spins. It returns flags
// without the buffer, which no completion carries.
func (g *BufferGroup) unused(flags uint32) uint32 {
	bid := int(flags >> compBufShift)
	flags &= (1<<compBufShift - 1) &^ (compBuffer | compBufMore)
	if g.closed || uint(bid) >= uint(len(g.bufs)) {
		return flags
	}
	g.take(bid, 0, false)
	b := &g.bufs[bid]
	if b.refs--; b.refs == 0 && b.out {
		g.back(bid)
	}
	return flags
}

// ended is opDone's for r, a RecvMultishot whose receive (a multishot, or a turn) ended with res
// and completion flags: it queues the completion of data and re-arms r (rearm), re-arms r as a
// multishot after a turn that found no data (EAGAIN), or queues r for a turn after ENOBUFS (park),
// and reports true; else (an error, end of file, a cancel, the group closed) it reports false and
// opDone ends r. The end of a turn frees its place for the next request in the queue (pump).
func (g *BufferGroup) ended(r *reqRec, res int32, flags uint32) bool {
	rq := g.l.req
	turn := r.turn
	if turn {
		r.turn = false
		g.turns--
	}
	switch {
	case r.cancelReq:
	case res > 0:
		rq.complete(r, res, flags)
		g.rearm(r)
		return true
	case g.closed:
	case res == -int32(unix.EAGAIN) && turn:
		// The socket had nothing at its turn: wait for data as a multishot again.
		r.state = stQueued
		rq.drv.start(r)
		g.pump()
		return true
	case res == -int32(unix.ENOBUFS):
		// The group ran dry: the receive ended, nothing is lost (the data stays in the
		// socket). Tell the callback, and queue for a turn when a buffer comes back.
		rq.queue(r, res, compMore)
		g.park(r)
		return true
	}
	if turn {
		g.pump()
	}
	return false
}

// park puts r, a RecvMultishot whose receive ended (its group ran dry, or its turn is over), at
// the back of the group's queue, and starts the turns that the free buffers allow.
func (g *BufferGroup) park(r *reqRec) {
	r.state = stParked
	g.parked = append(g.parked, r)
	g.pump()
}

// rearm re-arms r, a RecvMultishot whose receive ended with data: as a multishot when no other
// request of the group waits for a buffer or has a turn, else at the back of the queue (park).
func (g *BufferGroup) rearm(r *reqRec) {
	if g.phead == len(g.parked) && g.turns == 0 {
		r.state = stQueued
		g.l.req.drv.start(r)
		return
	}
	g.park(r)
}

// pump gives turns to the requests at the head of the queue while the group has a free buffer
// for each turn in flight: a turn (reqVars.turn) is one receive into one buffer that never waits
// for data (see BufferGroup), whose end comes back to opDone.
func (g *BufferGroup) pump() {
	if g.pumping || g.closed {
		return // the caller's loop goes on; a closed group gives no turns
	}
	g.pumping = true
	rq := g.l.req
	for g.phead < len(g.parked) && g.avail > g.turns {
		r := g.parked[g.phead]
		g.parked[g.phead] = nil
		if g.phead++; g.phead == len(g.parked) {
			g.parked, g.phead = g.parked[:0], 0
		}
		r.state, r.turn = stQueued, true
		g.turns++
		rq.drv.start(r)
	}
	if g.phead > 32 && g.phead > len(g.parked)/2 {
		n := copy(g.parked, g.parked[g.phead:])
		clear(g.parked[n:])
		g.parked, g.phead = g.parked[:n], 0
	}
	g.pumping = false
}

// unpark removes r from the queue.
func (g *BufferGroup) unpark(r *reqRec) {
	for i := g.phead; i < len(g.parked); i++ {
		if g.parked[i] == r {
			g.parked = append(g.parked[:i], g.parked[i+1:]...)
			return
		}
	}
}

// finishParked ends, with ECANCELED, every queued request of the group on fd (CloseFd).
func (g *BufferGroup) finishParked(fd int) {
	rq := g.l.req
	for i := g.phead; i < len(g.parked); i++ {
		if p := g.parked[i]; int(p.fd) == fd {
			g.unpark(p)
			i--
			p.cancelReq = true
			rq.finish(p, -int32(unix.ECANCELED), 0)
		}
	}
}

// Close releases the group. A RecvMultishot still using it is cancelled: its last completion
// is ECANCELED (or, when the operation won the race, its data), on every backend. Calling it
// again returns nil. Errors: ErrNotOwner from a goroutine other than the loop's (the group
// stays open), the unregister error on uring.
func (g *BufferGroup) Close() error {
	if !g.l.owned() {
		return ErrNotOwner
	}
	if g.closed {
		return nil
	}
	g.closed = true
	rq := g.l.req
	if !g.l.closed {
		for _, r := range rq.recs {
			if r.grp() == g && r.op == OpRecvMultishot && r.state != stFree && r.state != stDone {
				Request{rec: r, gen: r.gen}.Cancel()
			}
		}
	}
	for i, x := range rq.groups {
		if x == g {
			rq.groups = append(rq.groups[:i], rq.groups[i+1:]...)
			break
		}
	}
	for _, r := range g.parked[g.phead:] {
		g.l.req.finish(r, -int32(unix.ECANCELED), 0)
	}
	g.parked, g.phead = nil, 0
	if g.l.closed {
		return nil
	}
	return g.l.req.drv.closeGroup(g)
}

// RecvMultishot receives from socket fd into buffers of g until cancelled, end of file or an
// error: one completion per receive (Buf a view of the group buffer holding it, More set;
// release the buffer when done with it), IORING_OP_RECV with IORING_RECV_MULTISHOT (Linux
// 6.0) and a provided buffer ring on uring. When g has no free buffer, a completion with
// ENOBUFS and More set says so; the request re-arms itself when a buffer is released, and no
// data is lost; while other requests of g also wait for buffers, it receives into one buffer
// per turn, in turn with them (see BufferGroup). At most 8 of its completions run per Once,
// behind those of other requests.
// Its last completion (More unset) is N 0 at end of file, or an error (ECANCELED after
// Cancel or CloseFd, ETIME at its deadline).
func (l *Loop) RecvMultishot(fd int, g *BufferGroup, flags int, cb Callback, token uint64) (Request, error) {
	if g == nil || g.l != l || !l.owned() || g.closed { // owned first: g.closed is the owner's
		if err := l.checkReq(OpRecvMultishot, fd, cb); err != nil {
			return Request{}, err
		}
		return Request{}, fmt.Errorf("ringev: recv-multishot on fd %d: nil, closed or foreign BufferGroup: %w", fd, unix.EINVAL)
	}
	r, err := l.newReq(OpRecvMultishot, fd, nil, false, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.bp, r.flags = unsafe.Pointer(g), int32(flags) // (grp)
	return l.req.submit(r), nil
}
