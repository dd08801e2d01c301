//go:build unix

package ringev

import "golang.org/x/sys/unix"

// Owned reports whether the caller runs on the loop's owner goroutine, the one that called New:
// where the methods that return ErrNotOwner elsewhere must be called. It is safe from any
// goroutine and costs a few instructions (no call into the runtime).
func (l *Loop) Owned() bool { return l.owned() }

// PostTo queues f to run on dst's goroutine, as dst.Post(f) does, and is called on l's
// goroutine: a loop handing work to another loop (a connection accepted here, bytes to
// write there). When both loops are on the uring backend and the kernel has
// IORING_OP_MSG_RING (Linux 5.18; io_uring_prep_msg_ring(3)), a sleeping dst is woken by a
// MSG_RING SQE in l's ring, which goes to the kernel with l's next io_uring_enter(2), instead
// of a write(2) to dst's wake-up eventfd and dst's read(2) of it. Elsewhere, or when the
// MSG_RING fails (its CQE carries the errno), the eventfd is written as Post does. Functions
// posted from one loop run in the order posted, together with dst's other posted functions.
// Errors: ErrNilFunc for a nil f, ErrNotOwner when not called on l's goroutine, ErrClosed
// after l's or dst's Close. dst == l is Post.
func (l *Loop) PostTo(dst *Loop, f func()) error {
	if f == nil {
		return ErrNilFunc
	}
	if !l.owned() {
		return ErrNotOwner
	}
	if l.closed {
		return ErrClosed
	}
	if dst == l {
		return l.Post(f)
	}
	dst.postMu.Lock()
	defer dst.postMu.Unlock()
	if dst.closed {
		return ErrClosed
	}
	dst.postQ = append(dst.postQ, f)
	dst.posted.Store(true)
	// As in wake: only the poster that sees dst sleeping wakes it.
	if dst.sleeping.CompareAndSwap(true, false) && (ringWake == nil || !ringWake(l, dst)) {
		writeWake(dst.wakeFd)
	}
	return nil
}

// ringWake, when set, wakes dst (which PostTo found sleeping, under dst.postMu) through l's
// ring and reports true, or reports false when it cannot: the requests layer sets it where the
// uring backend has such a wake-up (backend_uring_req_msg_linux.go); nil elsewhere.
var ringWake func(l, dst *Loop) bool

// writeWake adds one to a loop's wake-up eventfd, which its wait watches.
func writeWake(fd int) {
	var one = [8]byte{1}
	unix.Write(fd, one[:])
}
