//go:build unix

package fileio

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/aligned"
)

// Alignment is the address alignment of AlignedBuffer, in bytes: a page, which satisfies
// every device's O_DIRECT rule (usually 512 bytes, at most the page size).
const Alignment = aligned.Page

// AlignedBuffer returns n zeroed bytes whose first byte is aligned to Alignment, for O_DIRECT
// reads and writes (whose buffer address, length and offset must be multiples of the device's
// logical block size: keep n and the offsets multiples of 4096, or of 512 where the device
// allows it). The memory is ordinary Go heap memory, which the garbage collector never moves.
// It panics if n < 0, as make does.
func AlignedBuffer(n int) []byte { return aligned.Bytes(n) }

// FixedBuffer is one of a ring's registered buffers (IORING_REGISTER_BUFFERS, Linux 5.1), or a
// part of one, for ReadFixed and WriteFixed: the kernel has its pages pinned and mapped, so an
// operation on it skips that work. The zero value is no buffer.
type FixedBuffer struct {
	r     *Ring
	b     []byte
	index uint16
}

// Bytes returns the buffer's memory.
func (b FixedBuffer) Bytes() []byte { return b.b }

// Len returns len(b.Bytes()).
func (b FixedBuffer) Len() int { return len(b.b) }

// Index returns the buffer's index in the ring's table.
func (b FixedBuffer) Index() int { return int(b.index) }

// Slice returns the part [from, to) of the buffer, still registered. It panics when the range
// is out of bounds, as slicing does.
func (b FixedBuffer) Slice(from, to int) FixedBuffer {
	return FixedBuffer{r: b.r, b: b.b[from:to:to], index: b.index}
}

// maxFixedBuffers is the kernel's limit on registered buffers (UIO_MAXIOV).
const maxFixedBuffers = 1 << 14

// RegisterBuffers allocates n buffers of size bytes each (AlignedBuffer, so they serve
// O_DIRECT too) and registers them with the ring as fixed buffers (IORING_REGISTER_BUFFERS,
// Linux 5.1; with ModeDeputy, with both of its rings). A ring registers once. In ModeThreads
// the buffers are returned unregistered, and ReadFixed and WriteFixed are pread and pwrite.
//
// Errors wrap unix.EINVAL for n outside 1..16384 or size outside 1 byte..1 GiB, unix.EBUSY
// when the ring has registered buffers already, os.ErrClosed after Close, or the
// io_uring_register(2) errno (unix.ENOMEM, naming RLIMIT_MEMLOCK, when the pinned pages
// exceed it without CAP_IPC_LOCK).
func (r *Ring) RegisterBuffers(n, size int) ([]FixedBuffer, error) {
	if n < 1 || n > maxFixedBuffers || size < 1 || size > 1<<30 {
		return nil, fmt.Errorf("fileio: RegisterBuffers(%d, %d): want 1..%d buffers of 1 byte..1 GiB: %w",
			n, size, maxFixedBuffers, unix.EINVAL)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("fileio: RegisterBuffers: ring: %w", os.ErrClosed)
	}
	if r.bufs {
		return nil, fmt.Errorf("fileio: RegisterBuffers: the ring has registered buffers already: %w", unix.EBUSY)
	}
	bufs := make([][]byte, n)
	out := make([]FixedBuffer, n)
	for i := range bufs {
		bufs[i] = AlignedBuffer(size)
		out[i] = FixedBuffer{r: r, b: bufs[i], index: uint16(i)}
	}
	if r.uring != nil {
		o := getOp()
		o.kind, o.bufs = kindCtlBuffers, bufs
		err := r.eng.control(o)
		putOp(o)
		if err != nil {
			return nil, err
		}
	}
	r.bufs = true
	return out, nil
}

// errForeignBuffer is ReadFixed's and WriteFixed's error for a buffer of another ring.
var errForeignBuffer = fmt.Errorf("fixed buffer registered with another ring (or the zero FixedBuffer): %w", unix.EFAULT)

// ReadFixed reads b.Len() bytes at offset off into the registered buffer b
// (IORING_OP_READ_FIXED, Linux 5.1), as ReadAt does: fewer only with an error, io.EOF at the
// end of the file; the page cache is tried first as for ReadAt. Errors are *Error wrapping
// the errno (unix.EFAULT for a buffer of another ring), or os.ErrClosed.
func (f *File) ReadFixed(b FixedBuffer, off int64) (int, error) {
	return f.ReadFixedContext(context.Background(), b, off)
}

// ReadFixedContext is ReadFixed with a context, cancelled as ReadAtContext is.
func (f *File) ReadFixedContext(ctx context.Context, b FixedBuffer, off int64) (n int, err error) {
	if b.r != f.r {
		return 0, f.opError(kindReadFixed, off, errForeignBuffer)
	}
	return f.readFull(ctx, kindReadFixed, b.b, b.index, off)
}

// WriteFixed writes the registered buffer b at offset off (IORING_OP_WRITE_FIXED, Linux 5.1),
// all of it or an error, as WriteAt does. Errors as ReadFixed's.
func (f *File) WriteFixed(b FixedBuffer, off int64) (int, error) {
	return f.WriteFixedContext(context.Background(), b, off)
}

// WriteFixedContext is WriteFixed with a context, cancelled as ReadAtContext is.
func (f *File) WriteFixedContext(ctx context.Context, b FixedBuffer, off int64) (n int, err error) {
	if b.r != f.r {
		return 0, f.opError(kindWriteFixed, off, errForeignBuffer)
	}
	return f.writeFull(ctx, kindWriteFixed, b.b, b.index, off)
}
