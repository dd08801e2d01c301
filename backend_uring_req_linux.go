package ringev

// The uring backend's side of requests: the reqDriver that turns records into SQEs on the
// backend's ring and CQEs back into results. A request's SQE is prepared in the SQ when it is
// made (start), and one that cannot be (requests queued ahead of it, a full SQ, a deadline to
// link) when the loop waits (flush); no enter is made for either, so every request made while
// a Once runs goes to the kernel in the next io_uring_enter(2), the wait's (or a ride's); a
// full SQ is submitted and refilled at the wait, never a refused request. Until that enter, a
// prepared request is still the loop's: a cancel turns its SQE into a NOP, a deadline is
// linked to it (see unsubmitted). CQEs are read in place by the backend's wait (cqes) and by
// its ride (readCQE): a one-shot request's CQE stays in the ring, held until its callback runs
// (run), with no copy and no record built for it (the callback gets the Completion kept in the
// request's record); any other is taken when read.

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// A request's user_data: reqTag (bit 63; the backend's own tags, uringEpollTag and the ride
// tags of once.go, stay below it), the kind (bits 61-62), the record's generation (bits 32-60)
// and its index (bits 0-31).
const (
	reqTag       uint64 = 1 << 63
	reqKindOp    uint64 = 0 << 61 // the SQE of a one-shot request (one CQE, always its last)
	reqKindLink  uint64 = 1 << 61 // its IORING_OP_LINK_TIMEOUT
	reqKindCmd   uint64 = 2 << 61 // an IORING_OP_ASYNC_CANCEL the driver made (no record)
	reqKindMulti uint64 = 3 << 61 // the SQE of a multishot request or SubmitSQE's (one CQE or more)
	reqKindMask  uint64 = 3 << 61
)

func reqUserData(r *ringRec, kind uint64) uint64 {
	return reqTag | kind | uint64(r.gen)<<32 | uint64(r.idx)
}

// opUserData is the user_data of r's own SQE (reqKindOp, or reqKindMulti for an op that may
// post several CQEs).
func opUserData(r *ringRec) uint64 {
	if multishot(r.c.Op) {
		return reqUserData(r, reqKindMulti)
	}
	return reqUserData(r, reqKindOp)
}

// ringRec is a request's record on the uring backend: the core's record and the backend's
// own state for the request. newRec makes every record of a uring loop, so ringOf may turn
// the core's *reqRec back into its ringRec.
type ringRec struct {
	reqRec

	cqes   int8 // final CQEs still to come (op, link timeout)
	opDone bool // the op's final CQE arrived
	link   bool // the request's LINK_TIMEOUT is in the kernel (its CQE has not come)
	// The op's final result and completion flags, kept while its LINK_TIMEOUT's CQE is to come.
	opRes   int32
	opFlags uint32

	// sqPos is the SQ position (uring.Ring.SQTail) of the SQE in which the request was last
	// prepared; its LINK_TIMEOUT's, if it has one, follows. epoch is the driver's epoch then
	// (see unsubmitted).
	sqPos uint32
	epoch uint64

	ts  uring.Timespec // the LINK_TIMEOUT's (the kernel reads it at submission)
	sqe uring.SQE      // SubmitSQE's SQE
}

// ringOf returns the ringRec whose first field r is: r is a uring loop's record.
func ringOf(r *reqRec) *ringRec { return (*ringRec)(unsafe.Pointer(r)) }

// ring reports whether rq's driver is the uring backend's (its records are ringRecs).
func (rq *requests) ring() bool {
	_, ok := rq.drv.(*ringReqs)
	return ok
}

func (d *ringReqs) newRec() *reqRec { return &new(ringRec).reqRec }

// ringGroup is a buffer group on the uring backend: the core's group and its provided buffer
// ring.
type ringGroup struct {
	BufferGroup
	ring *uring.BufRing
}

// ringGroupOf returns the ringGroup whose first field g is: g is a uring loop's group.
func ringGroupOf(g *BufferGroup) *ringGroup { return (*ringGroup)(unsafe.Pointer(g)) }

// ringReqs is the uring backend's reqDriver.
type ringReqs struct {
	b        *uringBackend
	rq       *requests
	epoch    uint64       // counts the enters that may submit the SQ (submitted)
	subTail  uint32       // the SQ's tail (uring.Ring.SQTail) at the last of them
	queue    []queuedReq  // records to prepare at the next wait
	cmds     []ringCmd    // cancels to prepare at the next wait
	inflight int          // SQEs in the kernel whose last CQE has not arrived
	probe    *uring.Probe // the kernel's opcodes, probed at the first check
	space    uint32       // free SQEs known to flush (see sqe)
	dead     bool         // shutdown: CQEs only count down inflight
	slots    uint32       // the registered-file table's size (0: none registered yet)
	// next and seen are positions in the ring's CQ (uring.Ring.CQHead): the CQEs before seen
	// have been read (cqes); those from next to seen are held in the ring for their callbacks
	// (requests.held counts the one-shot requests' among them, which run takes from there), and
	// next is the CQ's head.
	next, seen uint32
	fdArg      [1]int32 // fixFile's argument to IORING_REGISTER_FILES_UPDATE
	// pollFirst: a Recv on an fd whose last Recv drained the socket (reqFd.drained, see
	// recvDone) is prepared with IORING_RECVSEND_POLL_FIRST (Linux 5.19; not
	// WithRecvPollFirst(false)): the kernel waits for the socket to be readable before its
	// first attempt instead of making one that finds nothing and then waiting. Set by the
	// check of OpRecv.
	pollFirst bool
}

type queuedReq struct {
	r   *ringRec
	gen uint32
}

// ringCmd is an IORING_OP_ASYNC_CANCEL to make: of one request (target), or of every request
// on fd (byFd).
type ringCmd struct {
	target uint64
	fd     int32
	byFd   bool
	ts     *uring.Timespec // a LINK_TIMEOUT update (target: the link's user_data) to ts
}

// newRingReqs returns the uring backend's driver for l, or nil on another backend.
func newRingReqs(l *Loop, rq *requests) reqDriver {
	b, ok := l.be.(*uringBackend)
	if !ok {
		return nil
	}
	d := &ringReqs{b: b, rq: rq}
	if b.ring != nil {
		d.next = b.ring.CQHead()
		d.seen = d.next
	}
	b.reqs = d
	return d
}

// ringOpNeeds is, per request op, the io_uring opcode it is made of and the release that added
// what it needs; for a flag the probe cannot show (IORING_ACCEPT_MULTISHOT, IORING_RECV_MULTISHOT,
// IORING_ASYNC_CANCEL_FD|ALL) the witness is an opcode of the same release (io_uring_register(2),
// IORING_REGISTER_PROBE, 5.6, tells opcodes only).
var ringOpNeeds = [...]struct {
	code    uint8  // the opcode the op's SQE has
	witness uint8  // an opcode of the release that added the op's flag, or 0
	feature string // what the op needs, with its release, for the error
}{
	OpRead:            {uring.OpRead, 0, "IORING_OP_READ (Linux 5.6)"},
	OpWrite:           {uring.OpWrite, 0, "IORING_OP_WRITE (Linux 5.6)"},
	OpRecv:            {uring.OpRecv, 0, "IORING_OP_RECV (Linux 5.6)"},
	OpSend:            {uring.OpSend, 0, "IORING_OP_SEND (Linux 5.6)"},
	OpAccept:          {uring.OpAccept, 0, "IORING_OP_ACCEPT (Linux 5.5)"},
	OpAcceptMultishot: {uring.OpAccept, uring.OpSocket, "IORING_ACCEPT_MULTISHOT (Linux 5.19)"},
	OpConnect:         {uring.OpConnect, 0, "IORING_OP_CONNECT (Linux 5.5)"},
	OpClose:           {uring.OpAsyncCancel, uring.OpSocket, "IORING_ASYNC_CANCEL_FD|IORING_ASYNC_CANCEL_ALL (Linux 5.19)"},
	OpFsync:           {uring.OpFsync, 0, "IORING_OP_FSYNC (Linux 5.1)"},
	OpRecvMultishot:   {uring.OpRecv, uring.OpSendZC, "IORING_RECV_MULTISHOT with provided buffer rings (Linux 6.0)"},
}

// check probes the kernel's opcodes once (IORING_REGISTER_PROBE) and returns an error naming
// what op needs when the kernel lacks it (see ringOpNeeds).
func (d *ringReqs) check(op Op) error {
	if int(op) >= len(ringOpNeeds) || ringOpNeeds[op].code == 0 {
		return nil // OpSQE: the caller's SQE, the kernel's answer
	}
	if d.probe == nil {
		p, err := d.b.ring.Probe()
		if err != nil {
			return nil // no probe (before 5.6): the kernel's own answer will say
		}
		d.probe = p
	}
	supported := d.probe.OpSupported
	if hide := d.b.hides; hide != nil {
		supported = func(code uint8) bool { return !hide(code) && d.probe.OpSupported(code) }
	}
	if err := missingReqFeature(op, supported); err != nil {
		return err
	}
	if op == OpRecv {
		// IORING_RECVSEND_POLL_FIRST came with 5.19 (witness: IORING_OP_SOCKET); before, a recv
		// SQE's ioprio must be 0.
		d.pollFirst = supported(uring.OpSocket) && !d.rq.l.noPollFirst
	}
	return nil
}

// probeHides, set only by tests (export_test.go, before they make a loop), makes check take
// the opcodes it reports as missing from the kernel: a kernel without a feature, on any kernel.
// A uring loop takes it when it is made (uringBackend.hides) and keeps it for its life.
var probeHides func(code uint8) bool

// missingReqFeature returns an error naming what op needs (wrapping unix.EOPNOTSUPP) when
// supported, an opcode probe, lacks op's opcode or its witness; else nil.
func missingReqFeature(op Op, supported func(uint8) bool) error {
	n := ringOpNeeds[op]
	if supported(n.code) && (n.witness == 0 || supported(n.witness)) {
		return nil
	}
	return fmt.Errorf("needs %s, which this kernel lacks: %w", n.feature, unix.EOPNOTSUPP)
}

// start prepares r's SQE in the SQ at once when it can (no deadline to link, nothing queued
// before it, a free SQE: it never submits, so it never enters the ring), else queues r for
// flush; either way the wait's io_uring_enter(2) submits it.
func (d *ringReqs) start(rec *reqRec) {
	r := ringOf(rec)
	if r.deadline == 0 && len(d.queue) == 0 && !d.dead {
		if s := d.b.ring.GetSQE(); s != nil {
			if r.c.Op <= OpSend {
				prepBytes(s, rec) // prepReq's first case, without its call
			} else {
				prepReq(s, r)
			}
			d.fdBits(s, r)
			s.UserData = opUserData(r)
			r.state, r.cqes, r.opDone, r.link = stInflight, 1, false, false
			r.fast = r.c.Op <= OpSend && r.done == 0 && !r.cancelReq && !r.timedOut
			r.sqPos, r.epoch = d.b.ring.SQTail()-1, d.epoch
			d.inflight++
			return
		}
	}
	r.state = stQueued
	d.queue = append(d.queue, queuedReq{r, r.gen})
}

// rw is reqDriver.rw: the record and the SQE of a read, write, recv or send, written at once
// in one call (start's work for such a request, without its tests of what take and fastOK
// made sure of). When requests wait in the queue ahead of it, or the SQ is full, start queues
// it.
func (d *ringReqs) rw(op Op, fd int, buf []byte, arg int64, cb Callback, token uint64) Request {
	rq := d.rq
	ring := d.b.ring
	if rq.free == 0 || len(d.queue) != 0 {
		return d.rwQueued(op, fd, buf, arg, cb, token)
	}
	s := ring.GetSQE()
	if s == nil {
		return d.rwQueued(op, fd, buf, arg, cb, token)
	}
	pos := ring.SQTail() - 1
	r := ringOf(rq.pop())
	f := &rq.fds[fd]
	f.live++
	r.cb = cb
	r.state, r.fast = stInflight, true
	r.cqes, r.opDone, r.link = 1, false, false
	r.sqPos, r.epoch = pos, d.epoch
	c := &r.c
	c.Request.gen, c.Op, c.Fd, c.Token, c.Buf = r.gen, op, fd, token, buf
	s.Opcode, s.Fd = bytesOpcode[op&7], int32(fd)
	s.Addr, s.Len = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))), uint32(len(buf))
	if op <= OpWrite {
		r.off = arg
		s.Off = uint64(arg)
	} else {
		r.flags = int32(arg)
		s.OpFlags = uint32(arg)
		if op == OpRecv && f.drained && d.pollFirst {
			s.Ioprio = uring.RecvsendPollFirst
		}
	}
	if f.fixed {
		s.Flags = uring.SQEFixedFile
	}
	s.UserData = reqTag | uint64(r.gen)<<32 | uint64(r.idx)
	d.inflight++
	return Request{rec: &r.reqRec, gen: r.gen}
}

// rwQueued is rw when the request cannot be prepared at once: start queues it (or grows the
// pool first).
//
//go:noinline
func (d *ringReqs) rwQueued(op Op, fd int, buf []byte, arg int64, cb Callback, token uint64) Request {
	r := d.rq.take(op, fd, buf, cb, token)
	r.setArg(arg)
	return d.rq.submit(r)
}

// submitted is called before every io_uring_enter(2) on the ring that may submit its SQ (the
// backend's wait, its ride, a set's replacement, shutdown): the prepared requests are the
// kernel's from then on. (Calling it early is safe: a cancel then goes to the kernel as an
// IORING_OP_ASYNC_CANCEL behind the request, which the kernel takes in order.)
func (d *ringReqs) submitted() { d.epoch, d.subTail = d.epoch+1, d.b.ring.SQTail() }

// unsubmitted reports whether r is a request that start prepared in the SQ and no enter has
// submitted since: its SQE (sqeOf) and its LINK_TIMEOUT's (the next one, if r.link) are not the
// kernel's yet; a cancel can turn them into NOPs (the request never reaches the kernel) and a
// deadline can still be linked to the SQE while it is the SQ's last.
func (d *ringReqs) unsubmitted(r *ringRec) bool {
	return r.epoch == d.epoch && r.state == stInflight
}

// sqeOf returns the SQE of r, an unsubmitted request (else nil).
func (d *ringReqs) sqeOf(r *ringRec) *uring.SQE {
	if !d.unsubmitted(r) {
		return nil
	}
	return d.b.ring.SQEAtPos(r.sqPos)
}

// nop makes s a NOP whose CQE counts as a command's.
func nop(s *uring.SQE) {
	s.PrepNop()
	s.UserData = reqTag | reqKindCmd
}

// nopPrepared turns the SQEs of r, an unsubmitted request, into NOPs: it never reaches the
// kernel (their CQEs count down inflight as commands').
func (d *ringReqs) nopPrepared(r *ringRec) {
	ring := d.b.ring
	nop(ring.SQEAtPos(r.sqPos))
	if r.link {
		nop(ring.SQEAtPos(r.sqPos + 1))
		r.link = false
	}
	r.epoch = d.epoch - 1 // no longer unsubmitted
}

// unprep makes r, an unsubmitted request, NOPs (nopPrepared) and finishes it with ECANCELED.
func (d *ringReqs) unprep(r *ringRec) {
	d.nopPrepared(r)
	r.cqes = 0
	d.rq.opDone(&r.reqRec, -int32(unix.ECANCELED), 0)
}

func (d *ringReqs) cancel(rec *reqRec) {
	r := ringOf(rec)
	switch r.state {
	case stQueued: // not in the kernel: it never will be (flush skips it)
		d.rq.opDone(rec, -int32(unix.ECANCELED), 0)
	case stInflight:
		if d.unsubmitted(r) { // prepared, not submitted: it never will be
			d.unprep(r)
			return
		}
		d.cmds = append(d.cmds, ringCmd{target: opUserData(r)})
	}
}

// linkNow links a LINK_TIMEOUT of after (> 0) to r, a one-shot request prepared but not
// submitted, whose SQE must be the SQ's last (the LINK_TIMEOUT must follow it directly). It
// reports whether it did; when it did not, the loop's timer enforces the deadline.
func (d *ringReqs) linkNow(r *ringRec, after time.Duration) bool {
	if !d.unsubmitted(r) || r.link || multishot(r.c.Op) {
		return false
	}
	ring := d.b.ring
	at := ring.SQTail()
	t := ring.GetSQE()
	if t == nil {
		return false
	}
	// t must be the SQE right after r's in the SQ's order.
	if at != r.sqPos+1 {
		nop(t) // another SQE came after r's: the timer takes the deadline
		d.inflight++
		return false
	}
	ring.SQEAtPos(r.sqPos).Flags |= uring.SQEIOLink
	r.ts = uring.NewTimespec(after)
	t.PrepLinkTimeout(&r.ts, 0)
	t.UserData = reqUserData(r, reqKindLink)
	r.cqes, r.link = 2, true
	d.inflight++
	return true
}

// retime moves r's LINK_TIMEOUT, if it is in the kernel, to after from now (<= 0: out of
// reach, as a LINK_TIMEOUT cannot be removed): IORING_OP_TIMEOUT_REMOVE with
// IORING_TIMEOUT_UPDATE|IORING_LINK_TIMEOUT_UPDATE (Linux 5.15) at the next enter. The
// update's CQE is counted like a cancel's; its error (ENOENT: the link fired or was cancelled
// meanwhile; EINVAL before 5.15) leaves the request as the kernel has it. A one-shot request
// still queued gets its deadline as a LINK_TIMEOUT when flush prepares it.
func (d *ringReqs) retime(rec *reqRec, after time.Duration) bool {
	r := ringOf(rec)
	if r.state == stQueued && !multishot(r.c.Op) {
		return true // flush links a LINK_TIMEOUT, if a deadline is left
	}
	if r.state != stInflight {
		return false
	}
	if !r.link {
		// Prepared by start and not submitted yet: the deadline is linked to it now, as
		// flush links it to a queued request.
		return after > 0 && d.linkNow(r, after)
	}
	if after <= 0 {
		after = 1 << 62 // ~146 years
	}
	if d.unsubmitted(r) { // (r.link: its LINK_TIMEOUT is prepared after it)
		r.ts = uring.NewTimespec(after) // the kernel reads it at submission
		return true
	}
	r.ts = uring.NewTimespec(after)
	d.cmds = append(d.cmds, ringCmd{target: reqUserData(r, reqKindLink), ts: &r.ts})
	return true
}

func (d *ringReqs) cancelFd(fd int32) {
	for _, q := range d.queue {
		if r := q.r; r.gen == q.gen && r.state == stQueued && r.c.Fd == int(fd) && !r.noFd {
			r.cancelReq, r.fast = true, false
			d.rq.opDone(&r.reqRec, -int32(unix.ECANCELED), 0)
		}
	}
	if d.rq.fds[fd].live > 0 {
		for _, rec := range d.rq.recs {
			if r := ringOf(rec); r.state == stInflight && r.c.Fd == int(fd) && !r.noFd {
				r.cancelReq, r.fast = true, false
				if d.unsubmitted(r) {
					d.unprep(r) // it never reaches the kernel
				}
			}
		}
	}
	if d.rq.fds[fd].live > 0 { // (a number closed meanwhile could be another file's by the flush)
		d.cmds = append(d.cmds, ringCmd{fd: fd, byFd: true})
	}
}

// maxFileSlots bounds the registered-file table: the kernel keeps a pointer per slot.
const maxFileSlots = 65536

// registerFilesSparse makes the ring's registered-file table; tests replace it to play a kernel
// without sparse tables (SetFileTableFault).
var registerFilesSparse = (*uring.Ring).RegisterFilesSparse

func (d *ringReqs) fixFile(fd int32, on, live bool) (bool, error) {
	ring := d.b.ring
	if !on {
		// Every SQE that may carry the slot reaches the kernel first, which takes the file at
		// the request's issue and keeps it to its completion.
		if live && d.queued() {
			if err := d.flush(); err != nil {
				return true, err
			}
			if _, err := d.b.entering().Submit(); err != nil {
				return true, fmt.Errorf("submitting the SQEs prepared before: %w", err)
			}
		}
		d.fdArg[0] = -1
		if _, err := ring.UpdateFiles(uint32(fd), d.fdArg[:]); err != nil {
			return true, fmt.Errorf("emptying slot %d of the registered-file table (IORING_REGISTER_FILES_UPDATE, Linux 5.5): %w", fd, err)
		}
		return false, nil
	}
	if d.slots == 0 {
		n := uint32(maxFileSlots)
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(n) {
			n = uint32(lim.Cur)
		}
		if err := registerFilesSparse(ring, n); err != nil {
			return false, fmt.Errorf("making a registered-file table of %d slots (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE, Linux 5.19): %w", n, err)
		}
		d.slots = n
	}
	if uint32(fd) >= d.slots {
		return false, fmt.Errorf("the registered-file table has %d slots (min(RLIMIT_NOFILE, %d)): %w", d.slots, maxFileSlots, unix.ERANGE)
	}
	d.fdArg[0] = fd
	if _, err := ring.UpdateFiles(uint32(fd), d.fdArg[:]); err != nil {
		return false, fmt.Errorf("filling slot %d of the registered-file table (IORING_REGISTER_FILES_UPDATE, Linux 5.5): %w", fd, err)
	}
	return true, nil
}

func (d *ringReqs) needWait() bool { return len(d.queue) > 0 || len(d.cmds) > 0 || d.inflight > 0 }

// queued reports whether records or cancels wait to be prepared as SQEs (flush).
func (d *ringReqs) queued() bool {
	return d.b.ring.SQTail() != d.subTail || len(d.queue) > 0 || len(d.cmds) > 0
}

// sqe returns the first of n consecutive free SQEs, submitting what is queued when the SQ has
// less room. d.space counts the SQEs known free: valid during one flush only (the backend's
// own waits and looks take SQEs too), where every SQE taken is counted.
func (d *ringReqs) sqe(n uint32) (*uring.SQE, error) {
	ring := d.b.ring
	if d.space < n {
		if d.space = ring.SQSpaceLeft(); d.space < n {
			if _, err := d.b.entering().Submit(); err != nil {
				d.space = 0
				return nil, fmt.Errorf("ringev: uring backend: submitting a full SQ: %w", err)
			}
			d.space = ring.SQSpaceLeft()
		}
	}
	s := ring.GetSQE()
	if s == nil {
		d.space = 0
		return nil, fmt.Errorf("ringev: uring backend: the SQ stays full: %w", unix.EBUSY)
	}
	d.space--
	return s, nil
}

// flush prepares the queued records and cancels as SQEs; the backend's enter submits them.
func (d *ringReqs) flush() error {
	if len(d.queue) == 0 && len(d.cmds) == 0 {
		return nil // the steady state: start prepared every request already
	}
	rq := d.rq
	d.space = 0
	i := 0
	var err error
	for ; i < len(d.queue); i++ {
		q := d.queue[i]
		r := q.r
		if r.gen != q.gen || r.state != stQueued {
			continue
		}
		var left int64
		link := r.deadline != 0 && !multishot(r.c.Op) && r.timer.index < 0
		if link {
			if left = r.deadline - rq.l.now(); left <= 0 {
				r.timedOut, r.cancelReq, r.fast = true, true, false
				rq.opDone(&r.reqRec, -int32(unix.ECANCELED), 0)
				continue
			}
		}
		need := uint32(1)
		if link {
			need = 2
		}
		var s *uring.SQE
		if s, err = d.sqe(need); err != nil {
			break
		}
		prepReq(s, r)
		d.fdBits(s, r)
		s.UserData = opUserData(r)
		r.state, r.cqes, r.opDone, r.link = stInflight, 1, false, false
		r.fast = !link && r.deadline == 0 && r.c.Op <= OpSend && r.done == 0 && !r.cancelReq && !r.timedOut
		r.sqPos, r.epoch = d.b.ring.SQTail()-1, d.epoch-1 // not unsubmitted: the next enter is this flush's
		d.inflight++
		if link {
			s.Flags |= uring.SQEIOLink
			t := d.b.ring.GetSQE() // sqe made room for two
			d.space--
			r.ts = uring.NewTimespec(time.Duration(left))
			t.PrepLinkTimeout(&r.ts, 0)
			t.UserData = reqUserData(r, reqKindLink)
			r.cqes, r.link = 2, true
			d.inflight++
		}
	}
	k := copy(d.queue, d.queue[i:])
	clear(d.queue[k:])
	d.queue = d.queue[:k]
	if err != nil {
		return err
	}
	for j, c := range d.cmds {
		s, err := d.sqe(1)
		if err != nil {
			d.cmds = d.cmds[:copy(d.cmds, d.cmds[j:])]
			return err
		}
		if c.ts != nil {
			s.PrepTimeoutUpdate(c.ts, c.target, uring.LinkTimeoutUpdate)
		} else if c.byFd {
			s.PrepCancelFd(int(c.fd), uring.AsyncCancelAll)
		} else {
			s.PrepCancel(c.target, 0)
		}
		s.UserData = reqTag | reqKindCmd
		d.inflight++
	}
	d.cmds = d.cmds[:0]
	return nil
}

// bytesOpcode is the opcode of each op that moves bytes (OpRead to OpSend).
var bytesOpcode = [8]uint8{OpRead: uring.OpRead, OpWrite: uring.OpWrite, OpRecv: uring.OpRecv, OpSend: uring.OpSend}

// prepBytes prepares in s, a zeroed SQE, r's read, write, recv or send (what is left of it):
// prepReq's work for them, as field stores (the Preps rewrite all of the SQE, through a call).
func prepBytes(s *uring.SQE, r *reqRec) {
	p := r.c.Buf
	if r.done != 0 {
		p = p[r.done:] // the rest of a short write or send
	}
	s.Opcode, s.Fd = bytesOpcode[r.c.Op], int32(r.c.Fd)
	s.Addr, s.Len = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p)))), uint32(len(p))
	switch {
	case r.c.Op >= OpRecv:
		s.OpFlags = uint32(r.flags)
		return
	case r.off >= 0:
		s.Off = uint64(r.off + int64(r.done))
	default:
		s.Off = ^uint64(0) // the file position
	}
	if r.flags > 0 { // ReadFixed, WriteFixed: the registered buffer's index + 1
		s.Opcode, s.BufIndex = fixedOpcode[r.c.Op], uint16(r.flags-1)
	}
}

// prepReq prepares r's operation in s, a zeroed SQE (GetSQE's).
func prepReq(s *uring.SQE, r *ringRec) {
	if r.c.Op <= OpSend {
		prepBytes(s, &r.reqRec)
		return
	}
	fd := int(r.c.Fd)
	switch r.c.Op {
	case OpAccept:
		s.PrepAccept(fd, nil, nil, int(r.flags))
	case OpAcceptMultishot:
		s.PrepAcceptMultishot(fd, int(r.flags))
	case OpConnect:
		s.PrepConnect(fd, unsafe.Pointer(&r.sa), r.salen)
	case OpFsync:
		var fl uint32
		if r.flags == fsyncData {
			fl = uring.FsyncDatasync
		}
		s.PrepFsync(fd, fl)
	case OpRecvMultishot:
		if r.turn {
			prepTurn(s, r)
		} else {
			s.PrepRecvMultishot(fd, r.group.bgid, int(r.flags))
		}
	case OpSQE:
		*s = r.sqe
	}
}

// prepTurn prepares in s a RecvMultishot's turn (BufferGroup.pump): one IORING_OP_RECV (Linux
// 5.6) into one buffer of its group (IOSQE_BUFFER_SELECT, 5.7), with MSG_DONTWAIT, so that it
// takes at most one buffer and never waits for data (-EAGAIN when the socket is empty).
func prepTurn(s *uring.SQE, r *ringRec) {
	s.PrepRecv(r.c.Fd, nil, int(r.flags)|unix.MSG_DONTWAIT)
	s.Len = uint32(r.group.size)
	s.SetBufferGroup(r.group.bgid)
}

// fdBits adds to s, r's SQE just prepared, what r's fd state asks for: IOSQE_FIXED_FILE when
// the fd is in the registered-file table at slot fd (RegisterFile), and on a Recv after one
// that drained the socket IORING_RECVSEND_POLL_FIRST (see ringReqs.pollFirst). It is read at
// every preparation, so a continuation (the rest of a short write, a multishot re-armed)
// follows an UnregisterFile made since. The caller's SQE (OpSQE) is left as given.
func (d *ringReqs) fdBits(s *uring.SQE, r *ringRec) {
	if r.c.Op == OpSQE {
		return
	}
	f := &d.rq.fds[r.c.Fd]
	if f.fixed {
		s.Flags |= uring.SQEFixedFile
	}
	if r.c.Op == OpRecv && f.drained && d.pollFirst {
		s.Ioprio = uring.RecvsendPollFirst
	}
}

// cqes reads in place the CQEs that came since the last read (the backend's wait; its ride
// reads them as cqe does each): got and res are those of the backend's EPOLL_WAIT CQE, if it
// came. A one-shot request's CQE (reqKindOp) stays in the ring, held for its callback (run);
// any other of a request is taken at once (cqe). When none is held, the CQ's head moves past
// them all.
func (d *ringReqs) cqes(ring *uring.Ring) (got bool, res int32) {
	rq := d.rq
	tail := ring.CQTail()
	for p := d.seen; p != tail; p++ {
		c := ring.CQEAtPos(p)
		ud := c.UserData
		if ud&(reqTag|reqKindMask) == reqTag|reqKindOp {
			d.inflight--
			rq.held++
			continue
		}
		if ud&reqTag == 0 {
			if ud == uringEpollTag {
				got, res = true, c.Res
			} else if ud == uringWakeTag {
				d.b.woke = true
				d.b.msg.got++
			}
			continue
		}
		rq.pos = p
		d.cqe(c)
	}
	d.read(ring, tail)
	return got, res
}

// readCQE reads a request's CQE at position p (user_data with reqTag), as cqes reads each: the
// backend's ride reads its CQEs with it.
func (d *ringReqs) readCQE(c *uring.CQE, p uint32) {
	if c.UserData&reqKindMask == reqKindOp {
		d.inflight--
		d.rq.held++
		return
	}
	d.rq.pos = p
	d.cqe(c)
}

// cqUnread returns the positions of the CQEs that came since the last read: from (the CQ's head
// when no request was made yet, which holds none) to tail.
func (b *uringBackend) cqUnread() (from, tail uint32) {
	if b.reqs != nil {
		return b.reqs.seen, b.ring.CQTail()
	}
	return b.ring.CQHead(), b.ring.CQTail()
}

// cqRead marks the CQEs before position tail read (ringReqs.read), or gives them all back when
// no request was made yet.
func (b *uringBackend) cqRead(tail uint32) {
	if b.reqs != nil {
		b.reqs.read(b.ring, tail)
		return
	}
	b.ring.CQSetHead(tail)
}

// read marks the CQEs before position tail read (see cqes): the completions the core queues
// from now on are learned after them (requests.pos), and the CQ's head moves to tail when no
// CQE is held.
func (d *ringReqs) read(ring *uring.Ring, tail uint32) {
	d.seen, d.rq.pos = tail, tail
	if d.rq.held == 0 && d.next != tail {
		d.next = tail
		ring.CQSetHead(tail)
	}
}

// run is reqDriver.run: up to n completions' callbacks, from the CQEs held in the ring and
// the queued completions (requests.cq), merged by position. A held CQE is a one-shot request's
// only one: its result goes from the CQE to the callback, through the Completion in its record
// (the steady case: fast, and a read's any result or a write's whole count), or through opDone
// (heldCQE). The CQ's head follows.
func (d *ringReqs) run(n int) bool {
	rq := d.rq
	ring := d.b.ring
	ran := false
	for n > 0 {
		if rq.held == 0 {
			d.next = d.seen // the CQEs left were all taken when read (cqes)
		}
		// The held CQEs before limit come before the queued completion at cq[head].
		limit := d.seen
		if rq.head < len(rq.cq) {
			pos := rq.cq[rq.head].pos
			if int32(pos-d.next) <= 0 {
				n--
				if rq.runOne() {
					ran = true
				}
				continue
			}
			if int32(pos-limit) < 0 {
				limit = pos
			}
		}
		if rq.held == 0 {
			break
		}
		for n > 0 && d.next != limit {
			p := d.next
			d.next = p + 1
			c := ring.CQEAtPos(p)
			ud := c.UserData
			if ud&(reqTag|reqKindMask) != reqTag|reqKindOp {
				continue // taken when read (cqes), or not a request's
			}
			rq.held--
			n--
			idx := uint32(ud)
			if idx >= uint32(len(rq.recs)) {
				continue
			}
			r := ringOf(rq.recs[idx])
			res := c.Res
			if r.gen != uint32(ud>>32)&genMask || r.state != stInflight {
				continue // a stale CQE: its record was reused
			}
			if !r.fast || r.c.Op&1 == 0 && int(res) != len(r.c.Buf) && res >= 0 {
				d.heldCQE(r, res, c.Flags, p)
				break // (it may have queued a completion before limit)
			}
			// The steady case: finish's work and runOne's, for a read, write, recv or send
			// that ends with this result (OpRead and OpRecv are the odd ones).
			ran = true
			r.cqes = 0
			f := &rq.fds[r.c.Fd]
			if r.c.Op == OpRecv {
				f.drained = res >= 0 && int(res) < len(r.c.Buf)
			}
			if f.live--; f.live == 0 && f.closeRec != nil {
				rq.closeNow(f)
			}
			// The Completion: a free record's has Err nil and SockNonempty and More false
			// (recycle), so only what differs is written.
			cp := &r.c
			if c.Flags&uring.CQEFSockNonempty != 0 {
				cp.SockNonempty = r.c.Op == OpRecv
			}
			if res >= 0 {
				cp.N = int(res)
				if r.c.Op&1 != 0 {
					cp.Buf = cp.Buf[:res]
				}
			} else {
				cp.N, cp.Err = 0, r.compErr(res)
				if r.c.Op&1 != 0 {
					cp.Buf = nil
				}
			}
			// requests.last, written out: the handle is stale from the callback on, and the
			// record goes back to the pool after it (recycle's work: a steady record has no
			// group or keep).
			r.gen = (r.gen + 1) & genMask
			r.state = stFree
			rq.cbRec = r.idx + 1
			r.cb(cp)
			rq.cbRec = 0
			r.cb, cp.Buf, cp.SockNonempty = nil, nil, false
			if cp.Err != nil {
				cp.Err = nil
			}
			r.reqVars = reqVars{}
			r.nextFree, rq.free = rq.free, r.idx+1
			rq.live--
		}
	}
	ring.CQSetHead(d.next)
	return ran
}

// heldCQE takes the CQE at position p, held for r, a one-shot request, when it is not the
// steady case: opDone (or, with the request's LINK_TIMEOUT still to come, its result kept
// until then). A completion it queues is learned at p.
func (d *ringReqs) heldCQE(r *ringRec, res int32, flags uint32, p uint32) {
	rq := d.rq
	rq.pos = p
	r.opRes, r.opFlags, r.opDone = res, compFlags(flags), true
	if r.cqes--; r.cqes == 0 {
		rq.opDone(&r.reqRec, r.opRes, r.opFlags)
	}
	rq.pos = d.seen
}

// compFlags translates a CQE's flags (IORING_CQE_F_*) into the core's completion flags.
func compFlags(f uint32) uint32 {
	var c uint32
	if f&uring.CQEFMore != 0 {
		c |= compMore
	}
	if f&uring.CQEFSockNonempty != 0 {
		c |= compSockNonempty
	}
	if f&uring.CQEFBuffer != 0 {
		c |= compBuffer | f>>uring.CQEBufferShift<<compBufShift
	}
	if f&uring.CQEFBufMore != 0 {
		c |= compBufMore
	}
	return c
}

// cqe takes a request's CQE (user_data with reqTag) that is not held for a callback: a
// LINK_TIMEOUT's, a command's, a multishot or SubmitSQE request's; and after shutdown any.
func (d *ringReqs) cqe(c *uring.CQE) {
	ud, res, flags := c.UserData, c.Res, c.Flags
	kind := ud & reqKindMask
	more := flags&uring.CQEFMore != 0
	if kind == reqKindCmd {
		d.inflight--
		return
	}
	if !more {
		d.inflight--
	}
	idx, gen := uint32(ud), uint32(ud>>32)&genMask
	if int(idx) >= len(d.rq.recs) {
		return
	}
	r := ringOf(d.rq.recs[idx])
	if r.gen != gen || r.state != stInflight {
		return
	}
	if d.dead { // Loop.Close: no callback runs; a connection accepted meanwhile is closed
		if kind != reqKindLink {
			closeAccepted(r.c.Op, res)
		}
		return
	}
	if kind == reqKindLink {
		r.link = false
		if res == -int32(unix.ETIME) {
			r.timedOut = true
		}
	} else if more {
		d.rq.complete(&r.reqRec, res, compFlags(flags))
		return
	} else {
		r.opRes, r.opFlags, r.opDone = res, compFlags(flags), true
	}
	if r.cqes--; r.cqes == 0 && r.opDone {
		d.rq.opDone(&r.reqRec, r.opRes, r.opFlags)
	}
}

func (d *ringReqs) newGroup(bgid uint16, n, size int) (*BufferGroup, error) {
	rg := new(ringGroup)
	g := &rg.BufferGroup
	d.rq.l.initGroup(g, bgid, n, size)
	// Incremental consumption first (6.12): small messages then share a buffer.
	br, err := d.b.ring.SetupBufRingFlags(uint32(g.n), g.bgid, uring.PbufRingInc)
	g.inc = err == nil
	if err != nil {
		br, err = d.b.ring.SetupBufRing(uint32(g.n), g.bgid)
	}
	if err != nil {
		return nil, fmt.Errorf("ringev: NewBufferGroup: IORING_REGISTER_PBUF_RING (Linux 5.19): %w", err)
	}
	rg.ring = br
	for i := 0; i < g.n; i++ {
		br.Add(g.buf(i, g.size), uint16(i), i)
	}
	br.Advance(g.n)
	return g, nil
}

func (d *ringReqs) provide(g *BufferGroup, bid int) {
	ringGroupOf(g).ring.Provide(g.buf(bid, g.size), uint16(bid))
}

func (d *ringReqs) closeGroup(g *BufferGroup) error {
	rg := ringGroupOf(g)
	if rg.ring == nil {
		return nil
	}
	err := rg.ring.Close()
	rg.ring = nil
	return err
}

// shutdown cancels every request in the kernel (and makes those prepared but not submitted
// NOPs) and waits (at most a second) for their CQEs,
// so that no buffer of theirs is written after the loop closes; what is still in flight then
// keeps its records (and buffers) reachable for the life of the process. Then it drops the
// registered-file table, if one was made (RegisterFile).
func (d *ringReqs) shutdown() {
	ring := d.b.ring
	if ring != nil {
		// The CQEs held for callbacks get none: a connection an Accept accepted is closed.
		for p := d.next; p != d.seen; p++ {
			c := ring.CQEAtPos(p)
			if ud := c.UserData; ud&(reqTag|reqKindMask) == reqTag|reqKindOp && int(uint32(ud)) < len(d.rq.recs) {
				if r := d.rq.recs[uint32(ud)]; r.gen == uint32(ud>>32)&genMask && r.state == stInflight {
					closeAccepted(r.c.Op, c.Res)
				}
			}
		}
		d.rq.held = 0
		d.read(ring, d.seen)
	}
	// A request prepared in the SQ and not submitted never reaches the kernel, as one queued
	// never does: its SQEs become NOPs (counted in inflight as before), else the enter below
	// would submit them ahead of the cancel, and a Read would take bytes no callback gets.
	for _, rec := range d.rq.recs {
		if r := ringOf(rec); d.unsubmitted(r) {
			d.nopPrepared(r)
		}
	}
	d.dead = true
	d.queue, d.cmds = nil, nil
	if d.inflight > 0 && ring != nil {
		d.space = 0 // not known outside a flush
		if s, err := d.sqe(1); err == nil {
			s.PrepCancel(0, uring.AsyncCancelAny|uring.AsyncCancelAll)
			s.UserData = reqTag | reqKindCmd
			d.inflight++
			end := time.Now().Add(time.Second)
			for d.inflight > 0 && time.Now().Before(end) {
				d.b.entering().SubmitAndWaitTimeout(1, time.Until(end))
				n := ring.CQReady()
				for i := uint32(0); i < n; i++ {
					if c := ring.CQEAt(i); c.UserData&reqTag != 0 {
						d.cqe(c)
					}
				}
				ring.CQAdvance(n)
			}
		}
	}
	if d.inflight > 0 {
		abandoned = append(abandoned, d.rq.recs)
	}
	for _, g := range d.rq.groups {
		d.closeGroup(g)
	}
	if ring != nil {
		d.emptyFileTable()
	}
}

// emptyFileTable empties every slot of the registered-file table that RegisterFile filled, in
// one IORING_REGISTER_FILES_UPDATE (Linux 5.5; RegisterFilesSkip for the slots between, 5.12),
// so that Loop.Close releases those files before it returns: the kernel's teardown of the ring
// after close(2) of its fd runs later, in a worker (~30 ms here). It does not wait for requests
// still in the kernel, which hold the file until their CQE (an IORING_UNREGISTER_FILES could
// wait for them before 6.13). Errors are ignored: the teardown releases the files anyway.
func (d *ringReqs) emptyFileTable() {
	if d.slots == 0 {
		return
	}
	lo, hi := -1, -1
	for i := range d.rq.fds {
		if d.rq.fds[i].fixed {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 {
		return
	}
	fds := make([]int32, hi-lo+1)
	for i := range fds {
		fds[i] = uring.RegisterFilesSkip
		if f := &d.rq.fds[lo+i]; f.fixed {
			fds[i], f.fixed = -1, false
		}
	}
	d.b.ring.UpdateFiles(uint32(lo), fds)
}

// abandoned keeps the records of requests still in the kernel when their loop closed (see
// ringReqs.shutdown) reachable, with their buffers.
var abandoned [][]*reqRec
