package uring

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is one io_uring instance: its fd, the three shared mappings (SQ ring,
// CQ ring, SQE array) and the binding's local SQ state. It is not safe for
// concurrent use; see the package documentation for the thread rule.
//
// A Ring is always heap-allocated by New, so the timespec and getevents
// argument kept inside it have stable addresses for io_uring_enter(2).
type Ring struct {
	open bool // from New until Close
	// quick: open, with DEFER_TASKRUN and without SQPOLL: Submit's way in one frame
	quick      bool
	fd         int
	setupFlags uint32
	features   uint32
	sqEntries  uint32
	cqEntries  uint32

	// SQ: pointers into the SQ ring mapping (kernel-shared) and local state.
	sqHead  *uint32 // kernel advances as it consumes SQEs
	sqTail  *uint32 // we publish filled SQEs here (store-release)
	sqFlags *uint32 // IORING_SQ_* (NEED_WAKEUP, CQ_OVERFLOW, TASKRUN)
	sqMask  uint32
	// sqLimit is the SQ position GetSQE and PutSQE hand out SQEs up to before they read the
	// kernel's head again (more): the head last read plus the SQ's size (0 after Close).
	sqLimit   uint32
	sqes      []SQE  // the SQE array mapping
	sqeTail   uint32 // local tail: SQEs handed out by GetSQE
	sqFlushed uint32 // last value stored to *sqTail

	// CQ: pointers into the CQ ring mapping.
	cqHead     *uint32 // we advance after consuming CQEs (store-release)
	cqTail     *uint32 // kernel publishes CQEs here (we load-acquire)
	cqOverflow *uint32 // CQEs dropped (only without IORING_FEAT_NODROP)
	cqMask     uint32
	cqes       []CQE

	// The mappings as returned by mmap, for Close. cqRing aliases sqRing
	// with IORING_FEAT_SINGLE_MMAP.
	sqRing, cqRing, sqeMem []byte

	// Wait arguments for IORING_ENTER_EXT_ARG; arg.Ts points at ts.
	ts  Timespec
	arg GeteventsArg

	// io_uring_enter target: the fd, or the registered ring index with
	// enterFlags = EnterRegisteredRing after RegisterRingFd.
	enterFd    int
	enterFlags uint32
	regIndex   int // registered ring index, -1 for none

	sqWakeups uint64 // IORING_ENTER_SQ_WAKEUP calls made (tests)
	eintrs    uint64 // waits a signal ended early, resumed (tests)

	// timeouts holds the user_data of each TIMEOUT request in flight: flushSQ adds
	// the ones it publishes, CQAdvance drops each whose last CQE is consumed. Only
	// these end a wait early (see timeoutEnded).
	timeouts []uint64

	// Memory the kernel keeps addresses of: registered buffers and their
	// iovecs, kept reachable until UnregisterBuffers or Close.
	regBufs [][]byte
}

// setupTrials are the setup flag sets New tries, best first, when WithFlags is
// not given. EINVAL from io_uring_setup means "not supported here": try the
// next one.
var setupTrials = [...]uint32{
	SetupSingleIssuer | SetupDeferTaskrun, // 6.1
	SetupCoopTaskrun | SetupTaskrunFlag,   // 5.19
	0,
}

// sqpollTrials replace setupTrials with SQPOLL, which the kernel refuses to
// combine with DEFER_TASKRUN, COOP_TASKRUN and TASKRUN_FLAG.
var sqpollTrials = [...]uint32{
	SetupSingleIssuer, // 6.0
	0,
}

// unsupportedSetup are setup flags that change the ring layout in ways this
// binding does not handle.
const unsupportedSetup = SetupSQE128 | SetupCQE32 | SetupCQEMixed | SetupNoMmap |
	SetupNoSQArray | SetupRegisteredFdOnly

// New creates a ring with io_uring_setup(2) (5.1) and maps it.
//
// Without WithFlags the setup flags are found by trial, best first:
// SINGLE_ISSUER|DEFER_TASKRUN, then COOP_TASKRUN|TASKRUN_FLAG, then none (with
// WithSQPoll: SQPOLL|SINGLE_ISSUER, then SQPOLL); a set rejected with EINVAL
// is skipped. SetupFlags reports what was chosen.
// When SINGLE_ISSUER is chosen, the calling thread owns the ring: call
// runtime.LockOSThread first.
//
// Errors wrap the errno of the failing call: unix.ENOSYS (no io_uring in this
// kernel), unix.EPERM (io_uring disabled by sysctl kernel.io_uring_disabled or
// a seccomp policy), unix.EINVAL (bad entries or flags), unix.ENOMEM (the
// error then names RLIMIT_MEMLOCK: without CAP_IPC_LOCK the kernel charges
// ring memory to it, before 5.12 and again on recent kernels such as 6.18),
// or the mmap errno.
func New(opts ...Option) (*Ring, error) {
	c := config{entries: DefaultEntries}
	for _, o := range opts {
		o(&c)
	}
	trials := setupTrials[:]
	if c.sqPoll {
		trials = sqpollTrials[:]
	}
	if c.exact {
		if c.flags&unsupportedSetup != 0 {
			return nil, fmt.Errorf("uring: setup flags %#x not supported by this binding: %w",
				c.flags&unsupportedSetup, unix.EINVAL)
		}
		trials = []uint32{c.flags}
	}
	var err error
	for _, flags := range trials {
		var p Params
		p.Flags = flags | c.setupExtra(&p)
		if c.cqEntries != 0 {
			p.Flags |= SetupCQSize
			p.CQEntries = c.cqEntries
		}
		var fd int
		fd, err = setup(c.entries, &p)
		if err == nil {
			return newRing(fd, &p)
		}
		if !errors.Is(err, unix.EINVAL) {
			break
		}
	}
	return nil, explainSetup(err)
}

// explainSetup adds why io_uring_setup was refused to an EPERM or ENOSYS error: the
// kernel.io_uring_disabled sysctl (6.6), a seccomp or LSM policy, or no io_uring in the kernel;
// and to an ENOMEM error the RLIMIT_MEMLOCK that ring memory is charged to (see explainMemlock).
// The errno stays wrapped.
func explainSetup(err error) error {
	if errors.Is(err, unix.ENOMEM) {
		return explainMemlock(err, "ring memory (SQ and CQ rings, SQEs)")
	}
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	why := unusableReason(err, ioUringDisabled())
	if i := strings.LastIndex(why, ": "); i >= 0 {
		why = why[i+2:]
	}
	return fmt.Errorf("%w (%s)", err, why)
}

// setup calls io_uring_setup(2); the kernel fills in p.
func setup(entries uint32, p *Params) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, fmt.Errorf("uring: io_uring_setup(entries %d, flags %#x): %w", entries, p.Flags, errno)
	}
	return int(fd), nil
}

// newRing maps the rings of a freshly set-up fd. It takes ownership of fd.
func newRing(fd int, p *Params) (*Ring, error) {
	r := &Ring{
		open:       true,
		quick:      p.Flags&(SetupSQPoll|SetupDeferTaskrun) == SetupDeferTaskrun,
		fd:         fd,
		setupFlags: p.Flags,
		features:   p.Features,
		sqEntries:  p.SQEntries,
		cqEntries:  p.CQEntries,
		enterFd:    fd,
		regIndex:   -1,
	}
	if err := r.mmap(p); err != nil {
		r.Close()
		return nil, err
	}
	r.arg.Ts = uint64(uintptr(unsafe.Pointer(&r.ts)))
	return r, nil
}

// mmap maps the SQ ring, the CQ ring (the same mapping with
// IORING_FEAT_SINGLE_MMAP, 5.4) and the SQE array, and fills the SQ index
// array with the identity mapping once.
func (r *Ring) mmap(p *Params) error {
	sqSize := int(p.SQOff.Array) + int(p.SQEntries)*4
	cqSize := int(p.CQOff.CQEs) + int(p.CQEntries)*int(unsafe.Sizeof(CQE{}))
	single := p.Features&FeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqRing, err = mapRing(r.fd, OffSQRing, sqSize, "SQ ring"); err != nil {
		return err
	}
	if single {
		r.cqRing = r.sqRing
	} else if r.cqRing, err = mapRing(r.fd, OffCQRing, cqSize, "CQ ring"); err != nil {
		return err
	}
	sqeSize := int(p.SQEntries) * int(unsafe.Sizeof(SQE{}))
	if r.sqeMem, err = mapRing(r.fd, OffSQEs, sqeSize, "SQE array"); err != nil {
		return err
	}

	r.sqHead = u32At(r.sqRing, p.SQOff.Head)
	r.sqTail = u32At(r.sqRing, p.SQOff.Tail)
	r.sqFlags = u32At(r.sqRing, p.SQOff.Flags)
	r.sqMask = *u32At(r.sqRing, p.SQOff.RingMask)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.SQEntries)
	// Identity SQ array: slot i of the ring always names SQE i. Written
	// before the first io_uring_enter, which orders it for the kernel.
	array := unsafe.Slice(u32At(r.sqRing, p.SQOff.Array), p.SQEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	// The ring starts empty; our local tail starts at the kernel's.
	r.sqeTail = *r.sqTail
	r.sqFlushed = r.sqeTail
	r.sqLimit = r.sqeTail // the first SQE reads the head (more)

	r.cqHead = u32At(r.cqRing, p.CQOff.Head)
	r.cqTail = u32At(r.cqRing, p.CQOff.Tail)
	r.cqOverflow = u32At(r.cqRing, p.CQOff.Overflow)
	r.cqMask = *u32At(r.cqRing, p.CQOff.RingMask)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&r.cqRing[p.CQOff.CQEs])), p.CQEntries)
	return nil
}

func mapRing(fd int, off uint64, size int, what string) ([]byte, error) {
	b, err := unix.Mmap(fd, int64(off), size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("uring: mmap %s (%d bytes): %w", what, size, err)
	}
	return b, nil
}

// u32At points at the 32-bit word at byte offset off of a ring mapping.
func u32At(mem []byte, off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&mem[off]))
}

// Close unmaps the rings and closes the ring fd, which cancels the requests
// still in flight. It is idempotent: calls after the first return nil. After
// Close, GetSQE and PeekCQE return nil and the submit calls fail with an error
// wrapping unix.EBADF. The error, if any, wraps the munmap or close errno.
//
// A ring fd registered with RegisterRingFd is unregistered first; that works
// only on the thread that registered it (the registration is per thread), so
// call Close there, or the kernel keeps the ring alive until that thread
// exits.
func (r *Ring) Close() error {
	if !r.open {
		return nil
	}
	var errs []error
	if r.regIndex >= 0 {
		if err := r.UnregisterRingFd(); err != nil {
			errs = append(errs, err)
		}
	}
	unmap := func(b []byte) {
		if b != nil {
			if err := unix.Munmap(b); err != nil {
				errs = append(errs, fmt.Errorf("uring: munmap: %w", err))
			}
		}
	}
	unmap(r.sqeMem)
	if r.cqRing != nil && (r.sqRing == nil || &r.cqRing[0] != &r.sqRing[0]) {
		unmap(r.cqRing)
	}
	unmap(r.sqRing)
	if err := unix.Close(r.fd); err != nil {
		errs = append(errs, fmt.Errorf("uring: close: %w", err))
	}
	*r = Ring{fd: -1, enterFd: -1, regIndex: -1, setupFlags: r.setupFlags, features: r.features}
	return errors.Join(errs...)
}

// Fd returns the ring's file descriptor, -1 after Close.
func (r *Ring) Fd() int { return r.fd }

// SetupFlags returns the IORING_SETUP_* flags the ring was created with (the
// set chosen by trial, plus SetupCQSize when WithCQEntries was given).
func (r *Ring) SetupFlags() uint32 { return r.setupFlags }

// Features returns the IORING_FEAT_* flags the kernel reported at setup.
func (r *Ring) Features() uint32 { return r.features }

// SQEntries returns the number of SQ entries the kernel gave the ring.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// CQEntries returns the number of CQ entries the kernel gave the ring.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }
