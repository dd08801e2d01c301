//go:build unix

package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// File is an open file on a Ring. Its methods are safe for concurrent use; each call parks
// only the calling goroutine. ReadAt and WriteAt satisfy io.ReaderAt and io.WriterAt.
//
// A buffer passed to a method belongs to the kernel until the method returns, cancellation
// included (a cancelled call returns once the kernel has let go of it), and escapes to the
// heap.
type File struct {
	r      *Ring
	f      *os.File
	fd     int
	name   string
	direct bool // opened with O_DIRECT
	append bool // opened with O_APPEND: WriteAt refuses, as os.File does
	// dioMem and dioOff are the O_DIRECT alignments (statx STATX_DIOALIGN, Linux 6.1) of the
	// buffer's address and of the offset and length; 0 when unknown.
	dioMem, dioOff uint32

	// nowait: reads try preadv2 RWF_NOWAIT first (a regular file without O_DIRECT).
	nowait atomic.Bool
	// registered mirrors slot >= 0 for Registered.
	registered atomic.Bool

	// refs counts the calls in progress; closedBit is set by Close, which then waits for
	// the count to reach 0 (drained is closed by the call that brings it there).
	refs        atomic.Int64
	drained     chan struct{}
	drainedOnce atomic.Bool // drained is closed (a failed incref may also bring refs to 0)
	closeOnce   sync.Once
	closeErr    error

	// Owner-only (io_uring modes).
	slot int32 // registered-file index, -1 for none
}

const closedBit = 1 << 40

func newFile(r *Ring, f *os.File) (*File, error) {
	fd := int(f.Fd()) // blocking mode; io_uring honours O_NONBLOCK with EAGAIN
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("fileio: adopt %s (fd %d): fcntl(F_GETFL): %w", f.Name(), fd, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("fileio: adopt %s (fd %d): fstat: %w", f.Name(), fd, err)
	}
	ff := &File{r: r, f: f, fd: fd, name: f.Name(), direct: isDirect(fl), append: fl&unix.O_APPEND != 0,
		drained: make(chan struct{}), slot: -1}
	if ff.direct {
		ff.dioMem, ff.dioOff = dioAlign(fd)
	}
	ff.nowait.Store(r.cfg.pageFirst && haveNowait && !ff.direct && st.Mode&unix.S_IFMT == unix.S_IFREG)
	return ff, nil
}

// Name returns the name the file was opened or adopted with.
func (f *File) Name() string { return f.name }

// Fd returns the file descriptor (valid until Close).
func (f *File) Fd() uintptr { return uintptr(f.fd) }

// Direct reports whether the file was opened with O_DIRECT.
func (f *File) Direct() bool { return f.direct }

// Registered reports whether the file is in its ring's registered-file table
// (IORING_REGISTER_FILES2 sparse, Linux 5.19; see WithRegisteredFiles), so that its operations
// carry IOSQE_FIXED_FILE and the kernel skips a file lookup for each.
func (f *File) Registered() bool { return f.registered.Load() }

// Stat returns the file's os.FileInfo (fstat(2)).
func (f *File) Stat() (os.FileInfo, error) { return f.f.Stat() }

// incref counts a call in; false once Close has begun.
func (f *File) incref() bool {
	if f.refs.Add(1)&closedBit != 0 {
		f.decref()
		return false
	}
	return true
}

func (f *File) decref() {
	if f.refs.Add(-1) == closedBit && f.drainedOnce.CompareAndSwap(false, true) {
		close(f.drained)
	}
}

// Error is a failed file operation: which, on which file and descriptor, at which offset
// (-1: none), and why. Err is the errno (unix.Errno), io.ErrUnexpectedEOF, a context's error (with
// unix.ECANCELED), or os.ErrClosed.
type Error struct {
	Op   string // "read", "write", "readv", "writev", "read_fixed", "write_fixed", "fsync", "fdatasync", "close"
	Path string // the file's name
	Fd   int    // its descriptor
	Off  int64  // the offset, -1 for fsync, fdatasync and close
	Err  error
	hint string
}

// Error returns, for example, "fileio: read data.bin (fd 7) at offset 4096: input/output
// error".
func (e *Error) Error() string {
	s := fmt.Sprintf("fileio: %s %s (fd %d)", e.Op, e.Path, e.Fd)
	if e.Off >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Off)
	}
	s += ": " + e.Err.Error()
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	return s
}

// Unwrap returns Err, so that errors.Is and errors.As see the errno, os.ErrClosed or the
// context's error it holds.
func (e *Error) Unwrap() error { return e.Err }

var errNegativeOffset = errors.New("negative offset")

// opError wraps err for operation kind at off.
func (f *File) opError(kind opKind, off int64, err error) error {
	e := &Error{Op: kind.String(), Path: f.name, Fd: f.fd, Off: off, Err: err}
	if kind == kindFsync || kind == kindFdatasync {
		e.Off = -1
	}
	if f.direct && errors.Is(err, unix.EINVAL) {
		if f.dioMem != 0 {
			e.hint = fmt.Sprintf("EINVAL: O_DIRECT needs the buffer's address aligned to %d bytes and its length and the offset to %d: see AlignedBuffer",
				f.dioMem, f.dioOff)
		} else {
			e.hint = "EINVAL: O_DIRECT needs the buffer's address, its length and the offset aligned to the device's logical block size: see AlignedBuffer"
		}
	}
	return e
}

// result turns a record's result into a byte count or an error.
func (f *File) result(ctx context.Context, kind opKind, off int64, res int32) (int, error) {
	switch {
	case res >= 0:
		return int(res), nil
	case res == resClosed:
		return 0, f.opError(kind, off, os.ErrClosed)
	}
	errno := unix.Errno(-res)
	if (errno == unix.ECANCELED || errno == unix.EINTR) && ctx.Err() != nil {
		return 0, f.opError(kind, off, fmt.Errorf("%w (%w)", ctx.Err(), unix.ECANCELED))
	}
	return 0, f.opError(kind, off, errno)
}

// do runs one operation (o's kind, buffers and offset set) on the ring and returns its byte
// count or error.
func (f *File) do(ctx context.Context, o *op) (int, error) {
	kind, off := o.kind, o.off
	o.file = f
	o.state.Store(stQueued)
	f.r.eng.queue(o)
	if wait(ctx, o, f.r.eng.canceler()) {
		return 0, f.opError(kind, off, fmt.Errorf("%w (%w)", ctx.Err(), unix.ECANCELED))
	}
	res := o.res
	putOp(o)
	return f.result(ctx, kind, off, res)
}

// begin checks a call's offset, context and file, and counts it in; the caller must decref
// when begin returns nil.
func (f *File) begin(ctx context.Context, kind opKind, off int64) error {
	if off < 0 {
		return f.opError(kind, off, errNegativeOffset)
	}
	if ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return f.opError(kind, off, fmt.Errorf("%w (%w)", err, unix.ECANCELED))
		}
	}
	if !f.incref() {
		return f.opError(kind, off, os.ErrClosed)
	}
	return nil
}

// ReadAt reads len(p) bytes at offset off (io.ReaderAt): fewer only with an error, io.EOF at
// the end of the file. A file opened without O_DIRECT is read first from the page cache on the
// calling goroutine (WithPageCacheFirst), and only what is not cached goes to the ring
// (IORING_OP_READ, Linux 5.6). On an O_DIRECT file a short read is the end of the file.
// Errors are *Error wrapping the errno (unix.EINVAL, named, for a misaligned O_DIRECT read),
// or os.ErrClosed.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt with a context. When ctx ends first, an operation still queued is
// dropped, and one in the kernel is cancelled (IORING_OP_ASYNC_CANCEL, Linux 5.5) and waited
// for; the error then wraps ctx.Err() and unix.ECANCELED, and n counts what was read before.
// In ModeThreads a read already running is waited for.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (n int, err error) {
	return f.readFull(ctx, kindRead, p, 0, off)
}

// readFull reads all of p at off (kindRead or kindReadFixed, buffer index for the latter),
// one read1 after another: io.ReaderAt's contract.
func (f *File) readFull(ctx context.Context, kind opKind, p []byte, index uint16, off int64) (n int, err error) {
	if err := f.begin(ctx, kind, off); err != nil {
		return 0, err
	}
	defer f.decref()
	for len(p) > 0 {
		m, err := f.read1(ctx, kind, p, index, off)
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
		p = p[m:]
		off += int64(m)
		if f.direct && len(p) > 0 {
			return n, io.EOF
		}
	}
	return n, nil
}

// read1 is one read (kindRead or kindReadFixed): from the page cache if it is there, else
// through the ring.
func (f *File) read1(ctx context.Context, kind opKind, p []byte, index uint16, off int64) (int, error) {
	if f.nowait.Load() {
		n, errno := preadNowait(f.fd, p, off)
		switch errno {
		case 0:
			return n, nil
		case unix.EAGAIN, unix.EINTR:
			// Not (all) in the page cache: the ring waits for the device.
		case unix.EOPNOTSUPP:
			f.nowait.Store(false) // this file system has no RWF_NOWAIT reads
		default:
			return 0, f.opError(kind, off, errno)
		}
	}
	o := getOp()
	o.kind, o.buf, o.index, o.off = kind, p, index, off
	return f.do(ctx, o)
}

// WriteAt writes len(p) bytes at offset off (io.WriterAt) through the ring (IORING_OP_WRITE,
// Linux 5.6); a short write is continued, so fewer bytes come only with an error. A file
// opened with O_APPEND refuses it, as os.File does. Errors are *Error wrapping the errno, or
// os.ErrClosed.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	return f.WriteAtContext(context.Background(), p, off)
}

// errAppend is WriteAt's error on an O_APPEND file (os.File's words).
var errAppend = errors.New("invalid use of WriteAt on file opened with O_APPEND")

// WriteAtContext is WriteAt with a context, cancelled as ReadAtContext is; n counts what was
// written before.
func (f *File) WriteAtContext(ctx context.Context, p []byte, off int64) (n int, err error) {
	return f.writeFull(ctx, kindWrite, p, 0, off)
}

// writeFull writes all of p at off (kindWrite or kindWriteFixed, buffer index for the
// latter), one operation after another: io.WriterAt's contract.
func (f *File) writeFull(ctx context.Context, kind opKind, p []byte, index uint16, off int64) (n int, err error) {
	if f.append {
		return 0, f.opError(kind, off, errAppend)
	}
	if err := f.begin(ctx, kind, off); err != nil {
		return 0, err
	}
	defer f.decref()
	for len(p) > 0 {
		o := getOp()
		o.kind, o.buf, o.index, o.off = kind, p, index, off
		m, err := f.do(ctx, o)
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, f.opError(kind, off, io.ErrShortWrite)
		}
		n += m
		p = p[m:]
		off += int64(m)
	}
	return n, nil
}

// maxIovecs is the most iovecs one readv or writev takes (IOV_MAX).
const maxIovecs = 1024

// ReadvAt reads into bufs in order at offset off (preadv(2) semantics, IORING_OP_READV, Linux
// 5.1), until they are full or the file ends (then io.EOF); it returns the bytes read. Errors
// as ReadAt's.
func (f *File) ReadvAt(bufs [][]byte, off int64) (int, error) {
	return f.ReadvAtContext(context.Background(), bufs, off)
}

// ReadvAtContext is ReadvAt with a context, cancelled as ReadAtContext is.
func (f *File) ReadvAtContext(ctx context.Context, bufs [][]byte, off int64) (int, error) {
	return f.vectored(ctx, kindReadv, bufs, off)
}

// WritevAt writes bufs in order at offset off (pwritev(2) semantics, IORING_OP_WRITEV, Linux
// 5.1), all of them or an error. Errors as WriteAt's.
func (f *File) WritevAt(bufs [][]byte, off int64) (int, error) {
	return f.WritevAtContext(context.Background(), bufs, off)
}

// WritevAtContext is WritevAt with a context, cancelled as ReadAtContext is.
func (f *File) WritevAtContext(ctx context.Context, bufs [][]byte, off int64) (int, error) {
	if f.append {
		return 0, f.opError(kindWritev, off, errAppend)
	}
	return f.vectored(ctx, kindWritev, bufs, off)
}

// vectored runs readv or writev over bufs until they are done, the file ends (reads) or an
// error, at most maxIovecs buffers per operation.
func (f *File) vectored(ctx context.Context, kind opKind, bufs [][]byte, off int64) (n int, err error) {
	if err := f.begin(ctx, kind, off); err != nil {
		return 0, err
	}
	defer f.decref()
	var skip int // bytes of bufs[0] already done
	for {
		for len(bufs) > 0 && len(bufs[0]) == skip {
			bufs, skip = bufs[1:], 0
		}
		if len(bufs) == 0 {
			return n, nil
		}
		o := getOp()
		o.kind, o.off = kind, off
		for i, b := range bufs {
			if i == maxIovecs {
				break
			}
			if i == 0 {
				b = b[skip:]
			}
			if len(b) > 0 {
				o.iovs = append(o.iovs, iovec(b))
			}
		}
		var m int
		if kind == kindReadv && f.nowait.Load() {
			var errno unix.Errno
			m, errno = preadvNowait(f.fd, o.iovs, off)
			switch errno {
			case 0:
				putOp(o)
				goto done
			case unix.EAGAIN, unix.EINTR:
			case unix.EOPNOTSUPP:
				f.nowait.Store(false)
			default:
				putOp(o)
				return n, f.opError(kind, off, errno)
			}
		}
		if m, err = f.do(ctx, o); err != nil {
			return n, err
		}
	done:
		if m == 0 {
			if kind == kindReadv {
				return n, io.EOF
			}
			return n, f.opError(kind, off, io.ErrShortWrite)
		}
		n += m
		off += int64(m)
		for m > 0 {
			left := len(bufs[0]) - skip
			if m < left {
				skip += m
				break
			}
			m -= left
			bufs, skip = bufs[1:], 0
		}
		if kind == kindReadv && f.direct && len(bufs) > 0 {
			return n, io.EOF
		}
	}
}

// Sync commits the file's data and metadata to stable storage (fsync(2) through the ring,
// IORING_OP_FSYNC, Linux 5.1). Errors are *Error wrapping the errno, or os.ErrClosed.
func (f *File) Sync() error { return f.SyncContext(context.Background()) }

// SyncContext is Sync with a context, cancelled as ReadAtContext is.
func (f *File) SyncContext(ctx context.Context) error { return f.sync(ctx, kindFsync) }

// Datasync commits the file's data, and the metadata needed to read it, to stable storage
// (fdatasync(2), IORING_OP_FSYNC with IORING_FSYNC_DATASYNC). Errors as Sync's.
func (f *File) Datasync() error { return f.DatasyncContext(context.Background()) }

// DatasyncContext is Datasync with a context, cancelled as ReadAtContext is.
func (f *File) DatasyncContext(ctx context.Context) error { return f.sync(ctx, kindFdatasync) }

func (f *File) sync(ctx context.Context, kind opKind) error {
	if err := f.begin(ctx, kind, 0); err != nil {
		return err
	}
	defer f.decref()
	o := getOp()
	o.kind = kind
	_, err := f.do(ctx, o)
	return err
}

// Close closes the file: calls that begin afterwards fail with errors wrapping os.ErrClosed,
// operations of the file still queued or in the kernel are cancelled (IORING_OP_ASYNC_CANCEL)
// and return such errors (one that completes first returns its result), and once none is
// left the file leaves the registered-file table and its descriptor is closed. In ModeThreads
// a call already in pread/pwrite is waited for. A second Close returns an *Error (Op "close") wrapping
// os.ErrClosed; otherwise the error is close(2)'s.
func (f *File) Close() error {
	first := false
	f.closeOnce.Do(func() {
		first = true
		if f.refs.Add(closedBit) != closedBit {
			o := getOp()
			o.kind, o.file = kindCtlCancelFile, f
			_ = f.r.eng.control(o)
			putOp(o)
			<-f.drained
		}
		if f.slot >= 0 {
			o := getOp()
			o.kind, o.file = kindCtlUnregisterFile, f
			_ = f.r.eng.control(o)
			putOp(o)
		}
		f.closeErr = f.f.Close()
		f.r.forget(f)
	})
	if !first {
		return &Error{Op: "close", Path: f.name, Fd: f.fd, Off: -1, Err: os.ErrClosed}
	}
	return f.closeErr
}
