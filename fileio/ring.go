//go:build unix

package fileio

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// engine is what runs the operations: the io_uring owner, or the thread pool.
type engine interface {
	// queue hands o (stQueued) to the engine, from any goroutine.
	queue(o *op)
	// cancel asks the engine to cancel o (stCancelWanted) in the kernel; nil when the engine
	// cannot cancel an operation it has started.
	canceler() func(*op)
	// control runs a control operation and waits for it.
	control(o *op) error
	// stats returns the engine's counters.
	stats() Stats
}

// Stats counts what a Ring did since NewRing.
type Stats struct {
	// RingOps is the number of operations submitted to the kernel through the ring (or run
	// by the pool in ModeThreads); reads served from the page cache by the caller are not
	// among them.
	RingOps uint64
	// Enters is the number of io_uring_enter(2) calls the owner made to submit or wait
	// (with SQPOLL: only those that were needed).
	Enters uint64
	// Wakeups is the number of times a caller woke the sleeping owner (an eventfd write).
	Wakeups uint64
	// Cancels is the number of IORING_OP_ASYNC_CANCEL requests the owner submitted.
	Cancels uint64
	// DeputySQEs is the number of operations ModeDeputy submitted in the owner's own context.
	DeputySQEs uint64
}

// Ring runs file operations for any number of goroutines: on an io_uring owned by one
// goroutine (locked to its own OS thread in every io_uring mode but ModeNetpoll), or, where
// io_uring is unavailable, on a bounded pool of threads (ModeThreads). Its methods are safe
// for concurrent use.
type Ring struct {
	cfg    config
	mode   Mode
	reason string
	eng    engine
	uring  *uringEngine // nil in ModeThreads

	mu     sync.Mutex
	closed bool
	files  map[*File]struct{}
	bufs   bool // fixed buffers registered

	closing atomic.Bool
}

// NewRing starts a Ring. With ModeAuto (the default) it sets up an io_uring in ModeDefault,
// and where that fails it tries ModeDeferTaskrun (a policy that denies io_uring_register(2)
// alone leaves it working), then runs ModeThreads (no io_uring in the kernel: ENOSYS; sysctl
// kernel.io_uring_disabled or a seccomp policy: EPERM; io_uring_enter denied on the new ring),
// and Reason says why. A mode asked for by WithMode is used or NewRing fails.
//
// Errors: one wrapping unix.EINVAL that names a bad option; for an io_uring mode asked for by
// name, the setup error (wrapping the io_uring_setup(2), io_uring_enter(2) or
// io_uring_register(2) errno, and naming SQPOLL for the SQPOLL modes); off Linux, for an io_uring
// mode asked for by name, one naming the system and wrapping errors.ErrUnsupported.
func NewRing(opts ...Option) (*Ring, error) {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	r := &Ring{cfg: c, files: map[*File]struct{}{}}
	mode := c.mode
	if mode == ModeAuto {
		mode = ModeDefault
	}
	if mode != ModeThreads {
		e, err := startUring(r, mode)
		if err == nil {
			r.mode, r.eng, r.uring = mode, e, e
			if c.mode == ModeAuto {
				r.reason = fmt.Sprintf("auto: io_uring works here; %s is the default mode", mode)
			}
			return r, nil
		}
		if c.mode != ModeAuto {
			return nil, err
		}
		// ModeDefault needs io_uring_register(2) for its eventfd; a policy that denies
		// that call alone still leaves ModeDeferTaskrun, whose registrations are optional.
		if mode != ModeDeferTaskrun {
			if e, err2 := startUring(r, ModeDeferTaskrun); err2 == nil {
				r.mode, r.eng, r.uring = ModeDeferTaskrun, e, e
				r.reason = fmt.Sprintf("auto: %s unavailable, %s instead: %v", mode, ModeDeferTaskrun, err)
				return r, nil
			}
		}
		r.reason = fmt.Sprintf("auto: io_uring unavailable, pread/pwrite on %d threads instead: %v", c.threads, err)
	}
	r.mode = ModeThreads
	r.eng = startThreads(c.threads)
	return r, nil
}

// Mode returns the mode in use (never ModeAuto).
func (r *Ring) Mode() Mode { return r.mode }

// Reason says why ModeAuto chose the mode in use, for example that io_uring_setup(2) failed
// with EPERM; it is "" when the mode was asked for by name.
func (r *Ring) Reason() string { return r.reason }

// Stats returns the ring's counters.
func (r *Ring) Stats() Stats { return r.eng.stats() }

// Open opens the named file (os.OpenFile with flag and perm, plus O_CLOEXEC) on the ring.
// flag may include unix.O_DIRECT (see AlignedBuffer). Errors are os.OpenFile's
// (*os.PathError), or one wrapping os.ErrClosed after Close.
func (r *Ring) Open(name string, flag int, perm os.FileMode) (*File, error) {
	if r.closing.Load() {
		return nil, fmt.Errorf("fileio: open %s: ring: %w", name, os.ErrClosed)
	}
	f, err := os.OpenFile(name, flag|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, err
	}
	ff, err := r.Adopt(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return ff, nil
}

// Adopt puts an open file on the ring. The File owns f from now on: use f no more, and close
// the File instead (which closes f). It puts f's descriptor in blocking mode (as f.Fd does).
// The offsets of ReadAt and WriteAt need a file that can seek (a regular file or a block
// device): the io_uring modes read and write a pipe's stream whatever the offset, and a
// socket's at offset 0 alone (another fails with unix.ESPIPE), while ModeThreads, and so
// ModeAuto where io_uring is unavailable, fails with an error wrapping unix.ESPIPE on both
// (pread(2)).
// Errors: one wrapping os.ErrClosed after Close (f is then left open), or the fcntl(2) or
// fstat(2) errno.
func (r *Ring) Adopt(f *os.File) (*File, error) {
	if f == nil {
		return nil, fmt.Errorf("fileio: Adopt(nil): %w", unix.EINVAL)
	}
	ff, err := newFile(r, f)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("fileio: adopt %s: ring: %w", f.Name(), os.ErrClosed)
	}
	r.files[ff] = struct{}{}
	if r.uring != nil && r.cfg.regFiles {
		// Under r.mu, so that Close cannot stop the owner meanwhile.
		o := getOp()
		o.kind, o.file = kindCtlRegisterFile, ff
		_ = r.eng.control(o) // a file without a slot uses its fd
		putOp(o)
	}
	r.mu.Unlock()
	return ff, nil
}

// forget removes a closed file from the ring's set.
func (r *Ring) forget(f *File) {
	r.mu.Lock()
	delete(r.files, f)
	r.mu.Unlock()
}

// Close closes every File still open on the ring (see File.Close: their operations in
// flight are cancelled and return errors wrapping os.ErrClosed), then stops the owner and
// closes the ring. Operations started after Close fail with errors wrapping os.ErrClosed.
// Close is idempotent; the error joins the files' and the ring's close errors.
func (r *Ring) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.closing.Store(true)
	files := make([]*File, 0, len(r.files))
	for f := range r.files {
		files = append(files, f)
	}
	r.mu.Unlock()
	var errs []error
	for _, f := range files {
		if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	o := getOp()
	o.kind = kindCtlShutdown
	if err := r.eng.control(o); err != nil {
		errs = append(errs, err)
	}
	putOp(o)
	return errors.Join(errs...)
}
