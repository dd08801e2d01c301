package uring

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds every io_uring_register(2) call (5.1); all of them go
// through doRegister. See io_uring_register(2) for each opcode.

// registerOpNames names the register opcodes with the release that added
// them, for errors: an opcode the kernel does not know fails with EINVAL, and
// the error then names the missing feature.
var registerOpNames = [...]string{
	RegisterBuffers:        "IORING_REGISTER_BUFFERS (5.1)",
	UnregisterBuffers:      "IORING_UNREGISTER_BUFFERS (5.1)",
	RegisterFiles:          "IORING_REGISTER_FILES (5.1)",
	UnregisterFiles:        "IORING_UNREGISTER_FILES (5.1)",
	RegisterEventfd:        "IORING_REGISTER_EVENTFD (5.2)",
	UnregisterEventfd:      "IORING_UNREGISTER_EVENTFD (5.2)",
	RegisterFilesUpdate:    "IORING_REGISTER_FILES_UPDATE (5.5)",
	RegisterEventfdAsync:   "IORING_REGISTER_EVENTFD_ASYNC (5.6)",
	RegisterProbe:          "IORING_REGISTER_PROBE (5.6)",
	RegisterPersonality:    "IORING_REGISTER_PERSONALITY (5.6)",
	UnregisterPersonality:  "IORING_UNREGISTER_PERSONALITY (5.6)",
	RegisterRestrictions:   "IORING_REGISTER_RESTRICTIONS (5.10)",
	RegisterEnableRings:    "IORING_REGISTER_ENABLE_RINGS (5.10)",
	RegisterFiles2:         "IORING_REGISTER_FILES2 (5.13)",
	RegisterFilesUpdate2:   "IORING_REGISTER_FILES_UPDATE2 (5.13)",
	RegisterBuffers2:       "IORING_REGISTER_BUFFERS2 (5.13)",
	RegisterBuffersUpdate:  "IORING_REGISTER_BUFFERS_UPDATE (5.13)",
	RegisterIOWQAff:        "IORING_REGISTER_IOWQ_AFF (5.14)",
	UnregisterIOWQAff:      "IORING_UNREGISTER_IOWQ_AFF (5.14)",
	RegisterIOWQMaxWorkers: "IORING_REGISTER_IOWQ_MAX_WORKERS (5.15)",
	RegisterRingFds:        "IORING_REGISTER_RING_FDS (5.18)",
	UnregisterRingFds:      "IORING_UNREGISTER_RING_FDS (5.18)",
	RegisterPbufRing:       "IORING_REGISTER_PBUF_RING (5.19)",
	UnregisterPbufRing:     "IORING_UNREGISTER_PBUF_RING (5.19)",
	RegisterSyncCancel:     "IORING_REGISTER_SYNC_CANCEL (6.0)",
	RegisterFileAllocRange: "IORING_REGISTER_FILE_ALLOC_RANGE (6.0)",
	RegisterPbufStatus:     "IORING_REGISTER_PBUF_STATUS (6.8)",
	RegisterNapi:           "IORING_REGISTER_NAPI (6.9)",
	UnregisterNapi:         "IORING_UNREGISTER_NAPI (6.9)",
	RegisterClock:          "IORING_REGISTER_CLOCK (6.12)",
	RegisterCloneBuffers:   "IORING_REGISTER_CLONE_BUFFERS (6.12)",
	RegisterSendMsgRing:    "IORING_REGISTER_SEND_MSG_RING (6.13)",
	RegisterZcrxIfq:        "IORING_REGISTER_ZCRX_IFQ (6.15)",
	RegisterResizeRings:    "IORING_REGISTER_RESIZE_RINGS (6.13)",
	RegisterMemRegion:      "IORING_REGISTER_MEM_REGION (6.13)",
}

// RegisterOpName returns the name of a register opcode with the kernel
// release that added it, e.g. "IORING_REGISTER_PBUF_RING (5.19)".
func RegisterOpName(op uint32) string {
	op &^= RegisterUseRegisteredRing
	if int(op) < len(registerOpNames) && registerOpNames[op] != "" {
		return registerOpNames[op]
	}
	return fmt.Sprintf("io_uring_register opcode %d", op)
}

// doRegister is the one choke point for io_uring_register(2) on a ring: every
// register call of the binding goes through it (and through sysRegister,
// the only place the syscall is made). EINTR is retried. The error names the
// opcode (and so the feature, with its release) and wraps the errno; an
// ENOMEM from an opcode whose memory the kernel charges to RLIMIT_MEMLOCK
// (registered buffers, provided-buffer rings, memory regions) also names the
// limit and whether CAP_IPC_LOCK exempts the caller.
func (r *Ring) doRegister(op uint32, arg unsafe.Pointer, nrArgs uint32) (int, error) {
	if !r.open {
		return 0, errClosed
	}
	return sysRegister(r.fd, op, arg, nrArgs)
}

// sysRegister makes the io_uring_register(2) syscall on fd (a ring fd, or a
// registered ring index with RegisterUseRegisteredRing in op).
func sysRegister(fd int, op uint32, arg unsafe.Pointer, nrArgs uint32) (int, error) {
	for {
		ret, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), uintptr(op),
			uintptr(arg), uintptr(nrArgs), 0, 0)
		switch errno {
		case 0:
			return int(ret), nil
		case unix.EINTR:
			continue
		}
		err := fmt.Errorf("uring: io_uring_register(%s): %w", RegisterOpName(op), errno)
		if errno == unix.ENOMEM && memlockCharged(op) {
			err = explainMemlock(err, "the memory "+RegisterOpName(op)+" pins")
		}
		return 0, err
	}
}

// RegisterFiles registers fds as the ring's fixed-file table
// (IORING_REGISTER_FILES, 5.1); fds[i] becomes fixed file i, for SQEs with
// SQEFixedFile. -1 leaves a slot empty. Errors wrap the register errno
// (unix.EBUSY when a table is already registered, unix.EMFILE, unix.EBADF).
func (r *Ring) RegisterFiles(fds []int32) error {
	if len(fds) == 0 {
		return fmt.Errorf("uring: RegisterFiles: no fds: %w", unix.EINVAL)
	}
	_, err := r.doRegister(RegisterFiles, unsafe.Pointer(&fds[0]), uint32(len(fds)))
	return err
}

// RegisterFilesSparse registers a fixed-file table of n empty slots
// (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE, 5.19), to be
// filled by UpdateFiles or by ops that install direct descriptors. Errors
// wrap the register errno (unix.EINVAL from kernels without sparse tables).
func (r *Ring) RegisterFilesSparse(n uint32) error {
	reg := RsrcRegister{Nr: n, Flags: RsrcRegisterSparse}
	_, err := r.doRegister(RegisterFiles2, unsafe.Pointer(&reg), uint32(unsafe.Sizeof(reg)))
	return err
}

// UpdateFiles replaces fixed files off, off+1, ... with fds
// (IORING_REGISTER_FILES_UPDATE, 5.5); -1 empties a slot, RegisterFilesSkip
// leaves it. It returns the number of slots updated. Errors wrap the
// register errno (unix.ENXIO without a table, unix.EINVAL out of range).
func (r *Ring) UpdateFiles(off uint32, fds []int32) (int, error) {
	if len(fds) == 0 {
		return 0, nil
	}
	upd := RsrcUpdate{Offset: off, Data: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	n, err := r.doRegister(RegisterFilesUpdate, unsafe.Pointer(&upd), uint32(len(fds)))
	runtime.KeepAlive(fds)
	return n, err
}

// UnregisterFiles drops the fixed-file table (IORING_UNREGISTER_FILES, 5.1).
// Errors wrap the register errno (unix.ENXIO when none is registered).
func (r *Ring) UnregisterFiles() error {
	_, err := r.doRegister(UnregisterFiles, nil, 0)
	return err
}

// RegisterBuffers registers bufs as fixed buffers (IORING_REGISTER_BUFFERS,
// 5.1) for PrepReadFixed and PrepWriteFixed: bufs[i] is buffer index i. The
// kernel pins the pages; the ring keeps bufs reachable until
// UnregisterBuffers or Close. Errors wrap the register errno (unix.EBUSY when
// buffers are already registered, unix.ENOMEM over RLIMIT_MEMLOCK,
// unix.EFAULT, unix.EINVAL for an empty buffer).
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	if len(bufs) == 0 {
		return fmt.Errorf("uring: RegisterBuffers: no buffers: %w", unix.EINVAL)
	}
	iov := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 {
			return fmt.Errorf("uring: RegisterBuffers: buffer %d is empty: %w", i, unix.EINVAL)
		}
		iov[i].Base = &b[0]
		iov[i].SetLen(len(b))
	}
	if _, err := r.doRegister(RegisterBuffers, unsafe.Pointer(&iov[0]), uint32(len(iov))); err != nil {
		return err
	}
	r.regBufs = bufs // the kernel copied the iovecs; the buffers must stay reachable
	return nil
}

// UnregisterBuffers drops the fixed buffers (IORING_UNREGISTER_BUFFERS, 5.1).
// Errors wrap the register errno (unix.ENXIO when none are registered).
func (r *Ring) UnregisterBuffers() error {
	_, err := r.doRegister(UnregisterBuffers, nil, 0)
	if err == nil {
		r.regBufs = nil
	}
	return err
}

// RegisterEventfd makes the kernel signal eventfd efd for each posted CQE
// (IORING_REGISTER_EVENTFD, 5.2), or with async only for completions that
// did not finish inline at submission (IORING_REGISTER_EVENTFD_ASYNC, 5.6).
// Errors wrap the register errno (unix.EBUSY when one is registered,
// unix.EBADF).
func (r *Ring) RegisterEventfd(efd int, async bool) error {
	op := RegisterEventfd
	if async {
		op = RegisterEventfdAsync
	}
	fd := int32(efd)
	_, err := r.doRegister(op, unsafe.Pointer(&fd), 1)
	return err
}

// UnregisterEventfd removes the registered eventfd (IORING_UNREGISTER_EVENTFD,
// 5.2). Errors wrap the register errno (unix.ENXIO when none is registered).
func (r *Ring) UnregisterEventfd() error {
	_, err := r.doRegister(UnregisterEventfd, nil, 0)
	return err
}

// RegisterRingFd registers the ring fd in the calling thread's table of
// registered rings (IORING_REGISTER_RING_FDS, 5.18), and from then on every
// io_uring_enter of this ring passes the index with
// IORING_ENTER_REGISTERED_RING, saving the fd lookup (fdget/fdput) per
// call. The registration belongs to the calling thread: lock the goroutine
// with runtime.LockOSThread first (a SINGLE_ISSUER ring already requires it).
// Enter calls made from another thread fall back to the plain fd. Errors
// wrap the register errno (unix.EINVAL from kernels before 5.18, unix.EBUSY
// when already registered, unix.ENFILE when the thread's 16 slots are full).
func (r *Ring) RegisterRingFd() error {
	if r.regIndex >= 0 {
		return fmt.Errorf("uring: ring fd already registered at index %d: %w", r.regIndex, unix.EBUSY)
	}
	upd := RsrcUpdate{Offset: ^uint32(0), Data: uint64(r.fd)} // offset -1: any free slot
	if _, err := r.doRegister(RegisterRingFds, unsafe.Pointer(&upd), 1); err != nil {
		return err
	}
	r.regIndex = int(upd.Offset)
	r.enterFd, r.enterFlags = r.regIndex, EnterRegisteredRing
	return nil
}

// UnregisterRingFd undoes RegisterRingFd (IORING_UNREGISTER_RING_FDS, 5.18);
// enter calls use the plain fd again. Call it on the thread that registered.
// It returns nil when nothing is registered. Errors wrap the register errno.
func (r *Ring) UnregisterRingFd() error {
	if r.regIndex < 0 {
		return nil
	}
	upd := RsrcUpdate{Offset: uint32(r.regIndex)}
	r.regIndex, r.enterFd, r.enterFlags = -1, r.fd, 0
	_, err := r.doRegister(UnregisterRingFds, unsafe.Pointer(&upd), 1)
	return err
}

// RingFdRegistered reports whether enter calls use a registered ring index.
func (r *Ring) RingFdRegistered() bool { return r.regIndex >= 0 }

// SyncCancel cancels in-flight requests synchronously
// (IORING_REGISTER_SYNC_CANCEL, 6.0): it returns once the matching requests
// are cancelled (their CQEs, usually -ECANCELED, are then posted or, with
// DEFER_TASKRUN, posted by the next enter with GETEVENTS), or when timeout
// passes. The match is by userData, or by fd with AsyncCancelFd, or any
// request with AsyncCancelAny; AsyncCancelAll cancels every match instead of
// the first. timeout < 0 waits without a limit.
//
// Errors wrap the register errno: unix.ENOENT when nothing matched,
// unix.ETIME when the timeout passed first, unix.EALREADY, unix.EINVAL from
// kernels before 6.0.
func (r *Ring) SyncCancel(userData uint64, fd int, flags uint32, timeout time.Duration) error {
	reg := SyncCancelReg{Addr: userData, Fd: int32(fd), Flags: flags, Timeout: Timespec{-1, -1}}
	if timeout >= 0 {
		reg.Timeout = NewTimespec(timeout)
	}
	_, err := r.doRegister(RegisterSyncCancel, unsafe.Pointer(&reg), 1)
	return err
}

// EnableRings enables a ring created with SetupRDisabled
// (IORING_REGISTER_ENABLE_RINGS, 5.10). Errors wrap the register errno
// (unix.EBADFD when the ring is not disabled).
func (r *Ring) EnableRings() error {
	_, err := r.doRegister(RegisterEnableRings, nil, 0)
	return err
}

// SetIOWQMaxWorkers sets the maximum number of bounded and unbounded io-wq
// workers (IORING_REGISTER_IOWQ_MAX_WORKERS, 5.15); 0 leaves a value
// unchanged. It returns the previous values. Errors wrap the register errno.
func (r *Ring) SetIOWQMaxWorkers(bounded, unbounded uint32) (prevBounded, prevUnbounded uint32, err error) {
	vals := [2]uint32{bounded, unbounded}
	_, err = r.doRegister(RegisterIOWQMaxWorkers, unsafe.Pointer(&vals[0]), 2)
	return vals[0], vals[1], err
}
