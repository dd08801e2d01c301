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
// (run), with no copy and no record built for it (the callback gets the loop's Completion,
// filled from the record and the CQE: requests.comp); any other is taken when read.
//
// This file is the driver's state, its user_data and its probe of what the kernel offers. Its
// other parts: submission (backend_uring_req_prep_linux.go), cancels and deadlines
// (backend_uring_req_cancel_linux.go), completions (backend_uring_req_cqe_linux.go), the
// registered-file table (backend_uring_req_files_linux.go), buffer groups
// (backend_uring_req_group_linux.go) and Loop.Close's part (backend_uring_req_shutdown_linux.go).

import (
	"fmt"
	"unsafe"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// A request's user_data: reqTag (bit 63, backend_uring_linux.go), the kind (bits 61-62), the
// record's generation (bits 32-60) and its index (bits 0-31).
const (
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
	if multishot(r.op) {
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
	opDone bool // the op's final CQE arrived (its result and flags are kept: keepOpResult)
	link   bool // the request's LINK_TIMEOUT is in the kernel (its CQE has not come)
	// keptFlags is the op's completion flags while its LINK_TIMEOUT's CQE is to come, and
	// sqPos its result then (keepOpResult).
	keptFlags uint8

	// sqPos is the SQ position (uring.Ring.SQTail) of the SQE in which the request was last
	// prepared; its LINK_TIMEOUT's, if it has one, follows. epoch is the driver's epoch then
	// (see unsubmitted; an IO's submission by IO.Submit sets sqPos only).
	sqPos uint32
	epoch uint64
}

// keepOpResult keeps the op's final result and completion flags (from its CQE's flags) while
// the request's LINK_TIMEOUT's CQE is to come, in sqPos and keptFlags: the request was
// submitted, so unsubmitted no longer reads sqPos (a one-shot request's epoch is past, an IO's
// SQ position holds another user_data), and a one-shot request's completion flags are
// compSockNonempty at most (no more, no group buffer).
func (r *ringRec) keepOpResult(res int32, flags uint32) {
	r.sqPos, r.keptFlags, r.opDone = uint32(res), uint8(compFlags(flags)), true
}

// opResult returns what keepOpResult kept.
func (r *ringRec) opResult() (res int32, flags uint32) {
	return int32(r.sqPos), uint32(r.keptFlags)
}

// ringOf returns the ringRec whose first field r is: r is a uring loop's record.
func ringOf(r *reqRec) *ringRec { return (*ringRec)(unsafe.Pointer(r)) }

// ring reports whether rq's driver is the uring backend's (its records are ringRecs).
func (rq *requests) ring() bool {
	_, ok := rq.drv.(*ringReqs)
	return ok
}

func (d *ringReqs) newRec() *reqRec { return &new(ringRec).reqRec }

// ringReqs is the uring backend's reqDriver.
type ringReqs struct {
	b        *uringBackend
	rq       *requests
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
	// end is where the request turn's batch ends (turn): a read moves it to seen, so that a
	// callback's ride, which reads the CQEs after the turn's, ends the batch.
	end   uint32
	fdArg [1]int32 // fixFile's argument to IORING_REGISTER_FILES_UPDATE
	// pollFirst: a Recv on an fd whose last Recv drained the socket (reqFd's fdDrained, see
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
	l.rt, l.turner = d, d // (newRequests sets l.rd)
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
	OpRecvMsg:         {uring.OpRecvmsg, 0, "IORING_OP_RECVMSG (Linux 5.3)"},
	OpSendMsg:         {uring.OpSendmsg, 0, "IORING_OP_SENDMSG (Linux 5.3)"},
	OpPoll:            {uring.OpPollAdd, 0, "IORING_OP_POLL_ADD (Linux 5.1)"},
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

// missingReqFeature returns an error naming what op needs (wrapping unix.EOPNOTSUPP) when
// supported, an opcode probe, lacks op's opcode or its witness; else nil.
func missingReqFeature(op Op, supported func(uint8) bool) error {
	n := ringOpNeeds[op]
	if supported(n.code) && (n.witness == 0 || supported(n.witness)) {
		return nil
	}
	return fmt.Errorf("needs %s, which this kernel lacks: %w", n.feature, unix.EOPNOTSUPP)
}

func (d *ringReqs) needWait() bool { return len(d.queue) > 0 || len(d.cmds) > 0 || d.inflight > 0 }

// inKernel is ringUser's: SQEs in the kernel whose last CQE has not arrived.
func (d *ringReqs) inKernel() bool { return d.inflight > 0 }

// owed is ringUser's: completions wait for their callbacks (reqShared.pending), or records or
// cancels for their SQEs, prepared or not (queued).
func (d *ringReqs) owed() bool { return d.rq.pending() || d.queued() }

// queued reports whether records or cancels wait to be prepared as SQEs (flush).
func (d *ringReqs) queued() bool {
	return d.b.ring.SQTail() != d.b.subTail || len(d.queue) > 0 || len(d.cmds) > 0
}
