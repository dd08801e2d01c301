// Package fileio is file I/O from ordinary Go code over io_uring: a Ring that any number of
// goroutines use at once, each call parking only its own goroutine, never an OS thread of its
// own.
//
//	r, err := fileio.NewRing()               // io_uring where it works, else a thread pool
//	f, err := r.Open("data", os.O_RDONLY, 0)
//	n, err := f.ReadAt(buf, off)             // io.ReaderAt, from any goroutine
//	n, err = f.ReadAtContext(ctx, buf, off)  // cancelled in the kernel when ctx ends
//	f.Close()
//	r.Close()
//
// # How it works
//
// One goroutine owns the ring (Go's os.File instead blocks one thread per pread that waits for
// the device). A call takes a recycled operation record from a pool, pushes it on a lock-free
// stack and parks on the record's channel; no allocation per operation. The owner takes
// everything pushed since its last turn, prepares one SQE per operation, submits them all with
// one io_uring_enter(2), and wakes each caller with its result. In the default mode,
// ModeNetpoll, the owner is an ordinary goroutine: when it has nothing to do it sleeps in Go's
// netpoller until an eventfd is written, by the ring when it posts completions or by the first
// caller to find the owner asleep. So the ring holds no OS thread while it waits. In the other
// io_uring modes the owner is locked to its own OS thread and sleeps in io_uring_enter, and a
// caller wakes it through an eventfd that a read in the ring waits on.
//
// Reads of files opened without O_DIRECT first try the page cache on the calling goroutine
// (preadv2(2) with RWF_NOWAIT, Linux 4.14, which never waits for the device); only what is not
// cached goes to the ring. A ring round trip costs more than a read the page cache serves.
//
// # Submission modes
//
// WithMode picks how the owner submits: ModePlain, ModeDeferTaskrun
// (IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN, Linux 6.1), ModeSQPoll (a kernel SQ thread,
// IORING_SETUP_SQPOLL) or ModeDeputy (SQPOLL, and while the SQ thread sleeps the owner submits
// up to N operations itself: ringev's user-space version of the IORING_ENTER_SQ_DEPUTY RFC) or
// ModeNetpoll (no setup flags, an owner that holds no OS thread: see above). ModeAuto, the
// default, uses ModeDefault, which is ModeNetpoll, or ModeDeferTaskrun where a policy denies
// io_uring_register(2) (ModeNetpoll registers its eventfd). Where io_uring is unavailable (no kernel
// support, sysctl kernel.io_uring_disabled, a seccomp policy such as Docker's) ModeAuto runs
// the same API on pread/pwrite with a bounded pool of threads (ModeThreads), and Ring.Reason
// says why.
//
// # O_DIRECT and fixed buffers
//
// AlignedBuffer gives page-aligned memory for O_DIRECT. Ring.RegisterBuffers allocates and
// registers fixed buffers (IORING_REGISTER_BUFFERS) for File.ReadFixed and File.WriteFixed
// (IORING_OP_READ_FIXED, WRITE_FIXED). Files opened on a ring go in its registered-file table
// where the kernel has sparse tables (Linux 5.19).
//
// # Cancellation and Close
//
// When a Context method's context ends, an operation still queued is dropped, and one in the
// kernel is cancelled with IORING_OP_ASYNC_CANCEL and waited for: the call returns only once
// the kernel is done with its buffer. File.Close and Ring.Close cancel what is in flight; each
// such call returns an error wrapping os.ErrClosed, once, and no goroutine stays parked.
//
// # Platforms
//
// io_uring is Linux's. On macOS and the BSDs, NewRing with ModeAuto runs ModeThreads (pread,
// pwrite and fsync on the pool; O_DIRECT, the page-cache-first read and fixed-buffer
// registration are Linux's), Reason names the system, and an io_uring mode asked for by name
// fails with an error that names the system and wraps errors.ErrUnsupported. On Windows the
// package is empty: its API uses golang.org/x/sys/unix.
package fileio
