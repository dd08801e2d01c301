//go:build unix

package ringev

// Buffer groups: buffers a RecvMultishot receives into, the kernel (or the emulation) picking
// one per completion.

import (
	"fmt"

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
// A backend makes each group inside a struct of its own that adds its side (reqDriver.newGroup:
// ringGroup on uring, emulGroup in the emulation).
type BufferGroup struct {
	l      *Loop
	bgid   uint16
	size   int
	n      int
	slab   []byte
	avail  int       // buffers the kernel (or the emulation) can pick
	parked []*reqRec // RecvMultishots waiting for a buffer
	closed bool
	inc    bool    // incremental consumption (IOU_PBUF_RING_INC)
	off    []int32 // per buffer: bytes the kernel used so far (incremental consumption)
	refs   []int32 // per buffer: completions holding a view of it, not released yet
	out    []bool  // per buffer: the kernel is done with it (it comes back when refs is 0)
}

// take records that a completion holds n bytes of buffer bid (more: the kernel goes on
// filling it, compBufMore) and returns where they start in it.
func (g *BufferGroup) take(bid int, n int32, more bool) int32 {
	if bid >= g.n {
		return 0
	}
	off := g.off[bid]
	g.refs[bid]++
	if more {
		g.off[bid] += n
	} else {
		g.off[bid], g.out[bid] = 0, true
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
		off: make([]int32, n), refs: make([]int32, n), out: make([]bool, n)}
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

// Len returns the number of buffers, Size the bytes of each.
func (g *BufferGroup) Len() int { return g.n }

// Size returns the bytes of each buffer.
func (g *BufferGroup) Size() int { return g.size }

// Release gives back one completion's hold on buffer id (Completion.BufferID): the buffer goes
// back to the kernel once no completion holds it and the kernel is done with it (with
// incremental consumption, several completions share a buffer), and the RecvMultishots that
// ran dry are re-armed. Release each completion's buffer once; releasing a buffer no
// completion holds, an out-of-range id, and a release after the group's or the loop's Close
// are ignored. It is safe from any goroutine: from one that does not own the loop the release
// is posted to the loop, as Post does.
func (g *BufferGroup) Release(id int) {
	if !g.l.owned() {
		g.l.Post(func() { g.Release(id) }) // ErrClosed: the loop has let go of its groups
		return
	}
	if g.closed || id < 0 || id >= g.n || g.l.closed || g.refs[id] == 0 {
		return
	}
	if g.refs[id]--; g.refs[id] > 0 || !g.out[id] {
		return
	}
	g.out[id] = false
	g.l.req.drv.provide(g, id)
	g.avail++
	if len(g.parked) > 0 {
		rq := g.l.req
		for i, r := range g.parked {
			g.parked[i] = nil
			r.state = stQueued
			rq.drv.start(r)
		}
		g.parked = g.parked[:0]
	}
}

// unpark removes r from the parked list.
func (g *BufferGroup) unpark(r *reqRec) {
	for i, x := range g.parked {
		if x == r {
			g.parked = append(g.parked[:i], g.parked[i+1:]...)
			return
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
			if r.group == g && r.c.Op == OpRecvMultishot && r.state != stFree && r.state != stDone {
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
	for _, r := range g.parked {
		g.l.req.finish(r, -int32(unix.ECANCELED), 0)
	}
	g.parked = nil
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
// data is lost. At most 8 of its completions run per Once, behind those of other requests.
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
	r.group, r.flags = g, int32(flags)
	return l.req.submit(r), nil
}
