package uring

// This file declares the part of <linux/io_uring.h> the binding uses, once.
// Each item names the kernel release that introduced it. Names follow the C
// ones in Go style: IORING_OP_POLL_ADD is OpPollAdd, IORING_SETUP_SQPOLL is
// SetupSQPoll, and so on.

// SQE is struct io_uring_sqe, the 64-byte submission queue entry (5.1).
// Unions are exposed under their most general name: Off is also addr2 and
// cmd_op; Addr is also splice_off_in; OpFlags is rw_flags, poll32_events,
// cancel_flags, timeout_flags and the other per-opcode flag words; BufIndex
// is also buf_group; SpliceFdIn is also file_index and addr_len.
type SQE struct {
	Opcode      uint8  // IORING_OP_*
	Flags       uint8  // IOSQE_* (SQEFixedFile, SQEIOLink, ...)
	Ioprio      uint16 // request priority; per-op flags for send/recv/accept
	Fd          int32  // file descriptor (or fixed-file index) the op works on
	Off         uint64 // file offset; addr2; cmd_op
	Addr        uint64 // buffer, iovec or target address; splice_off_in
	Len         uint32 // buffer length, iovec count, or per-op count/flags
	OpFlags     uint32 // per-opcode flags (rw_flags, poll32_events, cancel_flags, ...)
	UserData    uint64 // passed back unchanged in CQE.UserData
	BufIndex    uint16 // fixed buffer index; buf_group with IOSQE_BUFFER_SELECT
	Personality uint16 // registered personality (credentials), 0 for none
	SpliceFdIn  int32  // splice_fd_in; file_index; addr_len
	Addr3       uint64 // third address argument
	_           uint64 // __pad2
}

// CQE is struct io_uring_cqe, the 16-byte completion queue entry (5.1).
type CQE struct {
	UserData uint64 // SQE.UserData of the request this completes
	Res      int32  // result: >= 0 on success, -errno on failure
	Flags    uint32 // IORING_CQE_F_* (CQEFMore, CQEFBuffer, ...)
}

// SQRingOffsets is struct io_sqring_offsets (5.1): byte offsets of the SQ
// ring fields inside the SQ ring mapping. UserAddr (resv2 before 6.5) is used
// only with IORING_SETUP_NO_MMAP.
type SQRingOffsets struct {
	Head        uint32
	Tail        uint32
	RingMask    uint32
	RingEntries uint32
	Flags       uint32
	Dropped     uint32
	Array       uint32
	Resv1       uint32
	UserAddr    uint64
}

// CQRingOffsets is struct io_cqring_offsets (5.1): byte offsets of the CQ
// ring fields inside the CQ ring mapping. Flags exists since 5.8.
type CQRingOffsets struct {
	Head        uint32
	Tail        uint32
	RingMask    uint32
	RingEntries uint32
	Overflow    uint32
	CQEs        uint32
	Flags       uint32
	Resv1       uint32
	UserAddr    uint64
}

// Params is struct io_uring_params (5.1), 120 bytes: passed to
// io_uring_setup(2) and filled in by the kernel.
type Params struct {
	SQEntries    uint32
	CQEntries    uint32
	Flags        uint32 // IORING_SETUP_*
	SQThreadCPU  uint32 // with SetupSQAff
	SQThreadIdle uint32 // SQPOLL idle time, milliseconds
	Features     uint32 // IORING_FEAT_*, set by the kernel
	WQFd         uint32 // with SetupAttachWQ
	Resv         [3]uint32
	SQOff        SQRingOffsets
	CQOff        CQRingOffsets
}

// GeteventsArg is struct io_uring_getevents_arg (5.11), passed to
// io_uring_enter(2) with EnterExtArg. Ts is the address of a
// struct __kernel_timespec (relative unless EnterAbsTimer). MinWaitUsec was
// the pad field before 6.12.
type GeteventsArg struct {
	Sigmask     uint64
	SigmaskSz   uint32
	MinWaitUsec uint32
	Ts          uint64
}

// Opcodes (enum io_uring_op), in kernel order, for SQE.Opcode.
const (
	OpNop            uint8 = iota // IORING_OP_NOP, 5.1
	OpReadv                       // IORING_OP_READV, 5.1
	OpWritev                      // IORING_OP_WRITEV, 5.1
	OpFsync                       // IORING_OP_FSYNC, 5.1
	OpReadFixed                   // IORING_OP_READ_FIXED, 5.1
	OpWriteFixed                  // IORING_OP_WRITE_FIXED, 5.1
	OpPollAdd                     // IORING_OP_POLL_ADD, 5.1
	OpPollRemove                  // IORING_OP_POLL_REMOVE, 5.1
	OpSyncFileRange               // IORING_OP_SYNC_FILE_RANGE, 5.2
	OpSendmsg                     // IORING_OP_SENDMSG, 5.3
	OpRecvmsg                     // IORING_OP_RECVMSG, 5.3
	OpTimeout                     // IORING_OP_TIMEOUT, 5.4
	OpTimeoutRemove               // IORING_OP_TIMEOUT_REMOVE, 5.5
	OpAccept                      // IORING_OP_ACCEPT, 5.5
	OpAsyncCancel                 // IORING_OP_ASYNC_CANCEL, 5.5
	OpLinkTimeout                 // IORING_OP_LINK_TIMEOUT, 5.5
	OpConnect                     // IORING_OP_CONNECT, 5.5
	OpFallocate                   // IORING_OP_FALLOCATE, 5.6
	OpOpenat                      // IORING_OP_OPENAT, 5.6
	OpClose                       // IORING_OP_CLOSE, 5.6
	OpFilesUpdate                 // IORING_OP_FILES_UPDATE, 5.6
	OpStatx                       // IORING_OP_STATX, 5.6
	OpRead                        // IORING_OP_READ, 5.6
	OpWrite                       // IORING_OP_WRITE, 5.6
	OpFadvise                     // IORING_OP_FADVISE, 5.6
	OpMadvise                     // IORING_OP_MADVISE, 5.6
	OpSend                        // IORING_OP_SEND, 5.6
	OpRecv                        // IORING_OP_RECV, 5.6
	OpOpenat2                     // IORING_OP_OPENAT2, 5.6
	OpEpollCtl                    // IORING_OP_EPOLL_CTL, 5.6
	OpSplice                      // IORING_OP_SPLICE, 5.7
	OpProvideBuffers              // IORING_OP_PROVIDE_BUFFERS, 5.7
	OpRemoveBuffers               // IORING_OP_REMOVE_BUFFERS, 5.7
	OpTee                         // IORING_OP_TEE, 5.8
	OpShutdown                    // IORING_OP_SHUTDOWN, 5.11
	OpRenameat                    // IORING_OP_RENAMEAT, 5.11
	OpUnlinkat                    // IORING_OP_UNLINKAT, 5.11
	OpMkdirat                     // IORING_OP_MKDIRAT, 5.15
	OpSymlinkat                   // IORING_OP_SYMLINKAT, 5.15
	OpLinkat                      // IORING_OP_LINKAT, 5.15
	OpMsgRing                     // IORING_OP_MSG_RING, 5.18
	OpFsetxattr                   // IORING_OP_FSETXATTR, 5.19
	OpSetxattr                    // IORING_OP_SETXATTR, 5.19
	OpFgetxattr                   // IORING_OP_FGETXATTR, 5.19
	OpGetxattr                    // IORING_OP_GETXATTR, 5.19
	OpSocket                      // IORING_OP_SOCKET, 5.19
	OpUringCmd                    // IORING_OP_URING_CMD, 5.19
	OpSendZC                      // IORING_OP_SEND_ZC, 6.0
	OpSendmsgZC                   // IORING_OP_SENDMSG_ZC, 6.1
	OpReadMultishot               // IORING_OP_READ_MULTISHOT, 6.7
	OpWaitid                      // IORING_OP_WAITID, 6.7
	OpFutexWait                   // IORING_OP_FUTEX_WAIT, 6.7
	OpFutexWake                   // IORING_OP_FUTEX_WAKE, 6.7
	OpFutexWaitv                  // IORING_OP_FUTEX_WAITV, 6.7
	OpFixedFdInstall              // IORING_OP_FIXED_FD_INSTALL, 6.8
	OpFtruncate                   // IORING_OP_FTRUNCATE, 6.9
	OpBind                        // IORING_OP_BIND, 6.11
	OpListen                      // IORING_OP_LISTEN, 6.11
	OpRecvZC                      // IORING_OP_RECV_ZC, 6.15
	OpEpollWait                   // IORING_OP_EPOLL_WAIT, 6.15
	OpReadvFixed                  // IORING_OP_READV_FIXED, 6.15
	OpWritevFixed                 // IORING_OP_WRITEV_FIXED, 6.15
	OpPipe                        // IORING_OP_PIPE, 6.16
)

// SQE flags (IOSQE_*), for SQE.Flags.
const (
	SQEFixedFile      uint8 = 1 << 0 // IOSQE_FIXED_FILE, 5.1: Fd is a registered-file index
	SQEIODrain        uint8 = 1 << 1 // IOSQE_IO_DRAIN, 5.2: issue after all earlier requests complete
	SQEIOLink         uint8 = 1 << 2 // IOSQE_IO_LINK, 5.3: the next SQE starts after this one succeeds
	SQEIOHardlink     uint8 = 1 << 3 // IOSQE_IO_HARDLINK, 5.5: like SQEIOLink, regardless of result
	SQEAsync          uint8 = 1 << 4 // IOSQE_ASYNC, 5.6: always issue from an io-wq worker
	SQEBufferSelect   uint8 = 1 << 5 // IOSQE_BUFFER_SELECT, 5.7: pick a provided buffer from BufIndex's group
	SQECQESkipSuccess uint8 = 1 << 6 // IOSQE_CQE_SKIP_SUCCESS, 5.17: no CQE when the request succeeds
)

// Setup flags (IORING_SETUP_*), for Params.Flags and WithFlags.
const (
	SetupIOPoll           uint32 = 1 << 0  // IORING_SETUP_IOPOLL, 5.1: busy-poll for I/O completion
	SetupSQPoll           uint32 = 1 << 1  // IORING_SETUP_SQPOLL, 5.1: a kernel thread polls the SQ
	SetupSQAff            uint32 = 1 << 2  // IORING_SETUP_SQ_AFF, 5.1: pin the SQPOLL thread to SQThreadCPU
	SetupCQSize           uint32 = 1 << 3  // IORING_SETUP_CQSIZE, 5.5: CQEntries is given
	SetupClamp            uint32 = 1 << 4  // IORING_SETUP_CLAMP, 5.6: clamp ring sizes to the maximum
	SetupAttachWQ         uint32 = 1 << 5  // IORING_SETUP_ATTACH_WQ, 5.6: share WQFd's io-wq
	SetupRDisabled        uint32 = 1 << 6  // IORING_SETUP_R_DISABLED, 5.10: start disabled
	SetupSubmitAll        uint32 = 1 << 7  // IORING_SETUP_SUBMIT_ALL, 5.18: keep submitting after an error
	SetupCoopTaskrun      uint32 = 1 << 8  // IORING_SETUP_COOP_TASKRUN, 5.19: no IPI to run task work
	SetupTaskrunFlag      uint32 = 1 << 9  // IORING_SETUP_TASKRUN_FLAG, 5.19: set SQTaskrun when task work waits
	SetupSQE128           uint32 = 1 << 10 // IORING_SETUP_SQE128, 5.19: 128-byte SQEs
	SetupCQE32            uint32 = 1 << 11 // IORING_SETUP_CQE32, 5.19: 32-byte CQEs
	SetupSingleIssuer     uint32 = 1 << 12 // IORING_SETUP_SINGLE_ISSUER, 6.0: one submitting task only
	SetupDeferTaskrun     uint32 = 1 << 13 // IORING_SETUP_DEFER_TASKRUN, 6.1: run task work only on GETEVENTS
	SetupNoMmap           uint32 = 1 << 14 // IORING_SETUP_NO_MMAP, 6.5: application provides ring memory
	SetupRegisteredFdOnly uint32 = 1 << 15 // IORING_SETUP_REGISTERED_FD_ONLY, 6.5: return a registered ring index
	SetupNoSQArray        uint32 = 1 << 16 // IORING_SETUP_NO_SQARRAY, 6.6: no SQ index array
	SetupHybridIOPoll     uint32 = 1 << 17 // IORING_SETUP_HYBRID_IOPOLL, 6.13: sleep before IOPOLL polling
	SetupCQEMixed         uint32 = 1 << 18 // IORING_SETUP_CQE_MIXED, 6.18: 16- and 32-byte CQEs in one ring
)

// Enter flags (IORING_ENTER_*), for io_uring_enter(2).
const (
	EnterGetEvents      uint32 = 1 << 0 // IORING_ENTER_GETEVENTS, 5.1: wait for min_complete CQEs
	EnterSQWakeup       uint32 = 1 << 1 // IORING_ENTER_SQ_WAKEUP, 5.1: wake the SQPOLL thread
	EnterSQWait         uint32 = 1 << 2 // IORING_ENTER_SQ_WAIT, 5.10: wait for SQ space (SQPOLL)
	EnterExtArg         uint32 = 1 << 3 // IORING_ENTER_EXT_ARG, 5.11: arg is a GeteventsArg
	EnterRegisteredRing uint32 = 1 << 4 // IORING_ENTER_REGISTERED_RING, 5.18: fd is a registered ring index
	EnterAbsTimer       uint32 = 1 << 5 // IORING_ENTER_ABS_TIMER, 6.12: GeteventsArg.Ts is absolute
	EnterExtArgReg      uint32 = 1 << 6 // IORING_ENTER_EXT_ARG_REG, 6.13: arg is a registered wait region offset
	EnterNoIOWait       uint32 = 1 << 7 // IORING_ENTER_NO_IOWAIT, 6.15: do not count the wait as iowait
)

// Features (IORING_FEAT_*), reported in Params.Features and Ring.Features.
const (
	FeatSingleMmap     uint32 = 1 << 0  // IORING_FEAT_SINGLE_MMAP, 5.4: SQ and CQ rings share one mapping
	FeatNoDrop         uint32 = 1 << 1  // IORING_FEAT_NODROP, 5.5: CQEs are never dropped on overflow
	FeatSubmitStable   uint32 = 1 << 2  // IORING_FEAT_SUBMIT_STABLE, 5.5: SQE data is consumed at submit
	FeatRWCurPos       uint32 = 1 << 3  // IORING_FEAT_RW_CUR_POS, 5.6: offset -1 means current position
	FeatCurPersonality uint32 = 1 << 4  // IORING_FEAT_CUR_PERSONALITY, 5.6
	FeatFastPoll       uint32 = 1 << 5  // IORING_FEAT_FAST_POLL, 5.7: internal poll instead of io-wq
	FeatPoll32Bits     uint32 = 1 << 6  // IORING_FEAT_POLL_32BITS, 5.9: 32-bit poll masks
	FeatSQPollNonfixed uint32 = 1 << 7  // IORING_FEAT_SQPOLL_NONFIXED, 5.11
	FeatExtArg         uint32 = 1 << 8  // IORING_FEAT_EXT_ARG, 5.11: EnterExtArg (waits with a timeout)
	FeatNativeWorkers  uint32 = 1 << 9  // IORING_FEAT_NATIVE_WORKERS, 5.12
	FeatRsrcTags       uint32 = 1 << 10 // IORING_FEAT_RSRC_TAGS, 5.13
	FeatCQESkip        uint32 = 1 << 11 // IORING_FEAT_CQE_SKIP, 5.17
	FeatLinkedFile     uint32 = 1 << 12 // IORING_FEAT_LINKED_FILE, 5.17
	FeatRegRegRing     uint32 = 1 << 13 // IORING_FEAT_REG_REG_RING, 6.3
	FeatRecvsendBundle uint32 = 1 << 14 // IORING_FEAT_RECVSEND_BUNDLE, 6.10
	FeatMinTimeout     uint32 = 1 << 15 // IORING_FEAT_MIN_TIMEOUT, 6.12
	FeatRWAttr         uint32 = 1 << 16 // IORING_FEAT_RW_ATTR, 6.14
	FeatNoIOWait       uint32 = 1 << 17 // IORING_FEAT_NO_IOWAIT, 6.15
)

// SQ ring flags (IORING_SQ_*), read from the shared SQ ring flags word.
const (
	SQNeedWakeup uint32 = 1 << 0 // IORING_SQ_NEED_WAKEUP, 5.1: SQPOLL thread sleeps; enter with EnterSQWakeup
	SQCQOverflow uint32 = 1 << 1 // IORING_SQ_CQ_OVERFLOW, 5.8: CQEs wait in the overflow list; enter with EnterGetEvents
	SQTaskrun    uint32 = 1 << 2 // IORING_SQ_TASKRUN, 5.19: task work pending; enter with EnterGetEvents
)

// CQE flags (IORING_CQE_F_*), for CQE.Flags.
const (
	CQEFBuffer       uint32 = 1 << 0 // IORING_CQE_F_BUFFER, 5.7: upper 16 bits hold the buffer ID
	CQEFMore         uint32 = 1 << 1 // IORING_CQE_F_MORE, 5.13: the request will post more CQEs
	CQEFSockNonempty uint32 = 1 << 2 // IORING_CQE_F_SOCK_NONEMPTY, 5.19: more data to read
	CQEFNotif        uint32 = 1 << 3 // IORING_CQE_F_NOTIF, 6.0: zero-copy notification
	CQEFBufMore      uint32 = 1 << 4 // IORING_CQE_F_BUF_MORE, 6.12: buffer partially consumed

	CQEBufferShift = 16 // IORING_CQE_BUFFER_SHIFT, 5.7
)

// POLL_ADD / POLL_REMOVE command flags, stored in SQE.Len.
const (
	PollAddMulti       uint32 = 1 << 0 // IORING_POLL_ADD_MULTI, 5.13: multishot (edge-triggered)
	PollUpdateEvents   uint32 = 1 << 1 // IORING_POLL_UPDATE_EVENTS, 5.13
	PollUpdateUserData uint32 = 1 << 2 // IORING_POLL_UPDATE_USER_DATA, 5.13
	PollAddLevel       uint32 = 1 << 3 // IORING_POLL_ADD_LEVEL, 5.19; rejected (-EINVAL) by current kernels
)

// ASYNC_CANCEL flags (IORING_ASYNC_CANCEL_*), for SQE.OpFlags.
const (
	AsyncCancelAll      uint32 = 1 << 0 // IORING_ASYNC_CANCEL_ALL, 5.19: every match, not just the first
	AsyncCancelFd       uint32 = 1 << 1 // IORING_ASYNC_CANCEL_FD, 5.19: match on SQE.Fd
	AsyncCancelAny      uint32 = 1 << 2 // IORING_ASYNC_CANCEL_ANY, 5.19: match any request
	AsyncCancelFdFixed  uint32 = 1 << 3 // IORING_ASYNC_CANCEL_FD_FIXED, 6.0: SQE.Fd is a fixed file
	AsyncCancelUserData uint32 = 1 << 4 // IORING_ASYNC_CANCEL_USERDATA, 6.6: match on user_data (default)
	AsyncCancelOp       uint32 = 1 << 5 // IORING_ASYNC_CANCEL_OP, 6.6: match on opcode
)

// mmap offsets (IORING_OFF_*) of the three ring mappings, 5.1.
const (
	OffSQRing uint64 = 0          // IORING_OFF_SQ_RING
	OffCQRing uint64 = 0x8000000  // IORING_OFF_CQ_RING
	OffSQEs   uint64 = 0x10000000 // IORING_OFF_SQES
)
