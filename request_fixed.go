//go:build unix

package ringev

// Registered (fixed) buffers for requests: Loop.RegisterBuffers, Loop.ReadFixed and
// Loop.WriteFixed. A ReadFixed is a Read whose buffer the backend has registered: on uring
// its SQE is IORING_OP_READ_FIXED (the flags field of an OpRead or OpWrite record, unused
// otherwise, holds the buffer's index + 1); the emulation reads the same memory with pread(2).

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/aligned"
)

// FixedBuffer is one of a loop's registered buffers (Loop.RegisterBuffers), or a part of one,
// for ReadFixed and WriteFixed: on uring the kernel keeps its pages pinned and mapped, so a
// request on it skips that work. Its memory is page-aligned (fit for O_DIRECT). The zero
// value is no buffer.
type FixedBuffer struct {
	l     *Loop
	b     []byte
	index uint16
}

// Bytes returns the buffer's memory.
func (b FixedBuffer) Bytes() []byte { return b.b }

// Len returns len(b.Bytes()).
func (b FixedBuffer) Len() int { return len(b.b) }

// Index returns the buffer's index in the loop's table.
func (b FixedBuffer) Index() int { return int(b.index) }

// Slice returns the part [from, to) of the buffer, still registered. It panics when the range
// is out of bounds, as slicing does.
func (b FixedBuffer) Slice(from, to int) FixedBuffer {
	return FixedBuffer{l: b.l, b: b.b[from:to:to], index: b.index}
}

// bufferRegistrar is a request driver that registers buffers with the kernel (uring).
type bufferRegistrar interface {
	registerBuffers(bufs [][]byte) error
}

// maxFixedBuffers is the kernel's limit on registered buffers (UIO_MAXIOV).
const maxFixedBuffers = 1 << 14

// RegisterBuffers allocates n page-aligned buffers of size bytes each and registers them as the
// loop's fixed buffers: IORING_REGISTER_BUFFERS (Linux 5.1) on uring; on the other backends
// they are plain memory, which ReadFixed and WriteFixed read and write with pread(2) and
// pwrite(2). A loop registers once.
//
// Errors: ErrNotOwner, ErrClosed; one wrapping unix.EINVAL for n outside 1..16384 or size
// outside 1 byte..1 GiB; unix.EBUSY when the loop has registered buffers already; or the
// io_uring_register(2) errno (unix.ENOMEM naming RLIMIT_MEMLOCK when the pinned pages exceed
// it without CAP_IPC_LOCK).
func (l *Loop) RegisterBuffers(n, size int) ([]FixedBuffer, error) {
	if !l.owned() {
		return nil, ErrNotOwner
	}
	if l.closed {
		return nil, ErrClosed
	}
	if n < 1 || n > maxFixedBuffers || size < 1 || size > 1<<30 {
		return nil, fmt.Errorf("ringev: RegisterBuffers(%d, %d): want 1..%d buffers of 1 byte..1 GiB: %w",
			n, size, maxFixedBuffers, unix.EINVAL)
	}
	rq := l.reqs()
	if rq.fixed {
		return nil, fmt.Errorf("ringev: RegisterBuffers: the loop has registered buffers already: %w", unix.EBUSY)
	}
	bufs := make([][]byte, n)
	out := make([]FixedBuffer, n)
	for i := range bufs {
		bufs[i] = aligned.Bytes(size)
		out[i] = FixedBuffer{l: l, b: bufs[i], index: uint16(i)}
	}
	if r, ok := rq.drv.(bufferRegistrar); ok {
		if err := r.registerBuffers(bufs); err != nil {
			return nil, fmt.Errorf("ringev: RegisterBuffers: %w", err)
		}
	}
	rq.fixed = true
	return out, nil
}

// ReadFixed is Read into the registered buffer b: IORING_OP_READ_FIXED (Linux 5.1) on uring,
// pread(2) into the same memory elsewhere. Its completion is a Read's (Op OpRead, Buf
// b.Bytes()[:N]). A b of another loop, or the zero FixedBuffer, gives an error wrapping
// unix.EFAULT; the other errors are Read's.
func (l *Loop) ReadFixed(fd int, b FixedBuffer, off int64, cb Callback, token uint64) (Request, error) {
	return l.fixedReq(OpRead, fd, b, off, cb, token)
}

// WriteFixed is Write of the registered buffer b: IORING_OP_WRITE_FIXED (Linux 5.1) on uring,
// pwrite(2) of the same memory elsewhere; a short write is finished by the loop, as Write's
// is. Its completion is a Write's (Op OpWrite). Errors as ReadFixed's.
func (l *Loop) WriteFixed(fd int, b FixedBuffer, off int64, cb Callback, token uint64) (Request, error) {
	return l.fixedReq(OpWrite, fd, b, off, cb, token)
}

func (l *Loop) fixedReq(op Op, fd int, b FixedBuffer, off int64, cb Callback, token uint64) (Request, error) {
	if b.l != l {
		if err := l.checkReq(op, fd, cb); err != nil {
			return Request{}, err
		}
		return Request{}, fmt.Errorf("ringev: %v on fd %d: fixed buffer registered with another loop (or the zero FixedBuffer): %w",
			op, fd, unix.EFAULT)
	}
	r, err := l.newReq(op, fd, b.b, true, cb, token)
	if err != nil {
		return Request{}, err
	}
	r.off = max(off, -1)
	r.flags = int32(b.index) + 1
	return l.req.submit(r), nil
}
