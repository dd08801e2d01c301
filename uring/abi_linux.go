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
//
// Every Prep method resets the whole SQE, user data and flags included (unlike
// liburing's io_uring_prep_* helpers, which leave user_data alone): call it
// first, then SetUserData and SetFlags.
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

// TIMEOUT / TIMEOUT_REMOVE / LINK_TIMEOUT flags (IORING_TIMEOUT_*), for
// SQE.OpFlags (timeout_flags).
const (
	TimeoutAbs          uint32 = 1 << 0 // IORING_TIMEOUT_ABS, 5.5: the timespec is an absolute time
	TimeoutUpdate       uint32 = 1 << 1 // IORING_TIMEOUT_UPDATE, 5.11: TIMEOUT_REMOVE updates instead
	TimeoutBoottime     uint32 = 1 << 2 // IORING_TIMEOUT_BOOTTIME, 5.15: CLOCK_BOOTTIME
	TimeoutRealtime     uint32 = 1 << 3 // IORING_TIMEOUT_REALTIME, 5.15: CLOCK_REALTIME
	LinkTimeoutUpdate   uint32 = 1 << 4 // IORING_LINK_TIMEOUT_UPDATE, 5.15: update a LINK_TIMEOUT
	TimeoutETimeSuccess uint32 = 1 << 5 // IORING_TIMEOUT_ETIME_SUCCESS, 5.16: -ETIME counts as success for links
	TimeoutMultishot    uint32 = 1 << 6 // IORING_TIMEOUT_MULTISHOT, 6.4: fire repeatedly
)

// FSYNC flags, for SQE.OpFlags (fsync_flags).
const (
	FsyncDatasync uint32 = 1 << 0 // IORING_FSYNC_DATASYNC, 5.1: fdatasync(2) semantics
)

// send/recv flags (IORING_RECVSEND_*, IORING_RECV_*), for SQE.Ioprio.
const (
	RecvsendPollFirst uint16 = 1 << 0 // IORING_RECVSEND_POLL_FIRST, 5.19: poll before the first attempt
	RecvMultishot     uint16 = 1 << 1 // IORING_RECV_MULTISHOT, 6.0: one CQE per receive, with a provided buffer
	RecvsendFixedBuf  uint16 = 1 << 2 // IORING_RECVSEND_FIXED_BUF, 6.0: registered buffer (zero-copy send)
	SendZCReportUsage uint16 = 1 << 3 // IORING_SEND_ZC_REPORT_USAGE, 6.2
	RecvsendBundle    uint16 = 1 << 4 // IORING_RECVSEND_BUNDLE, 6.10: several provided buffers per CQE
)

// accept flags (IORING_ACCEPT_*), for SQE.Ioprio.
const (
	AcceptMultishot uint16 = 1 << 0 // IORING_ACCEPT_MULTISHOT, 5.19: one CQE per accepted connection
	AcceptDontwait  uint16 = 1 << 1 // IORING_ACCEPT_DONTWAIT, 6.10: -EAGAIN instead of waiting
	AcceptPollFirst uint16 = 1 << 2 // IORING_ACCEPT_POLL_FIRST, 6.10: poll before the first attempt
)

// MSG_RING commands (SQE.Addr) and flags (SQE.OpFlags).
const (
	MsgData          uint64 = 0      // IORING_MSG_DATA, 5.18: post a CQE with Len as Res and Off as UserData
	MsgSendFd        uint64 = 1      // IORING_MSG_SEND_FD, 6.0: install a fixed file in the target ring
	MsgRingCQESkip   uint32 = 1 << 0 // IORING_MSG_RING_CQE_SKIP, 6.0: no CQE in the target (SEND_FD only)
	MsgRingFlagsPass uint32 = 1 << 1 // IORING_MSG_RING_FLAGS_PASS, 6.3: SpliceFdIn is the target CQE's Flags
)

// FileIndexAlloc in SQE.SpliceFdIn (file_index) of OPENAT, ACCEPT, ... asks
// the kernel to pick a free fixed-file slot (IORING_FILE_INDEX_ALLOC, 5.19).
const FileIndexAlloc uint32 = ^uint32(0)

// RegisterFilesSkip in an UpdateFiles slice leaves that slot unchanged
// (IORING_REGISTER_FILES_SKIP, 5.12).
const RegisterFilesSkip int32 = -2

// Register opcodes (enum io_uring_register_op), for io_uring_register(2).
// All of them go through Ring.doRegister.
const (
	RegisterBuffers           uint32 = 0       // IORING_REGISTER_BUFFERS, 5.1
	UnregisterBuffers         uint32 = 1       // IORING_UNREGISTER_BUFFERS, 5.1
	RegisterFiles             uint32 = 2       // IORING_REGISTER_FILES, 5.1
	UnregisterFiles           uint32 = 3       // IORING_UNREGISTER_FILES, 5.1
	RegisterEventfd           uint32 = 4       // IORING_REGISTER_EVENTFD, 5.2
	UnregisterEventfd         uint32 = 5       // IORING_UNREGISTER_EVENTFD, 5.2
	RegisterFilesUpdate       uint32 = 6       // IORING_REGISTER_FILES_UPDATE, 5.5
	RegisterEventfdAsync      uint32 = 7       // IORING_REGISTER_EVENTFD_ASYNC, 5.6
	RegisterProbe             uint32 = 8       // IORING_REGISTER_PROBE, 5.6
	RegisterPersonality       uint32 = 9       // IORING_REGISTER_PERSONALITY, 5.6
	UnregisterPersonality     uint32 = 10      // IORING_UNREGISTER_PERSONALITY, 5.6
	RegisterRestrictions      uint32 = 11      // IORING_REGISTER_RESTRICTIONS, 5.10
	RegisterEnableRings       uint32 = 12      // IORING_REGISTER_ENABLE_RINGS, 5.10
	RegisterFiles2            uint32 = 13      // IORING_REGISTER_FILES2, 5.13
	RegisterFilesUpdate2      uint32 = 14      // IORING_REGISTER_FILES_UPDATE2, 5.13
	RegisterBuffers2          uint32 = 15      // IORING_REGISTER_BUFFERS2, 5.13
	RegisterBuffersUpdate     uint32 = 16      // IORING_REGISTER_BUFFERS_UPDATE, 5.13
	RegisterIOWQAff           uint32 = 17      // IORING_REGISTER_IOWQ_AFF, 5.14
	UnregisterIOWQAff         uint32 = 18      // IORING_UNREGISTER_IOWQ_AFF, 5.14
	RegisterIOWQMaxWorkers    uint32 = 19      // IORING_REGISTER_IOWQ_MAX_WORKERS, 5.15
	RegisterRingFds           uint32 = 20      // IORING_REGISTER_RING_FDS, 5.18
	UnregisterRingFds         uint32 = 21      // IORING_UNREGISTER_RING_FDS, 5.18
	RegisterPbufRing          uint32 = 22      // IORING_REGISTER_PBUF_RING, 5.19
	UnregisterPbufRing        uint32 = 23      // IORING_UNREGISTER_PBUF_RING, 5.19
	RegisterSyncCancel        uint32 = 24      // IORING_REGISTER_SYNC_CANCEL, 6.0
	RegisterFileAllocRange    uint32 = 25      // IORING_REGISTER_FILE_ALLOC_RANGE, 6.0
	RegisterPbufStatus        uint32 = 26      // IORING_REGISTER_PBUF_STATUS, 6.8
	RegisterNapi              uint32 = 27      // IORING_REGISTER_NAPI, 6.9
	UnregisterNapi            uint32 = 28      // IORING_UNREGISTER_NAPI, 6.9
	RegisterClock             uint32 = 29      // IORING_REGISTER_CLOCK, 6.12
	RegisterCloneBuffers      uint32 = 30      // IORING_REGISTER_CLONE_BUFFERS, 6.12
	RegisterSendMsgRing       uint32 = 31      // IORING_REGISTER_SEND_MSG_RING, 6.13
	RegisterZcrxIfq           uint32 = 32      // IORING_REGISTER_ZCRX_IFQ, 6.15
	RegisterResizeRings       uint32 = 33      // IORING_REGISTER_RESIZE_RINGS, 6.13
	RegisterMemRegion         uint32 = 34      // IORING_REGISTER_MEM_REGION, 6.13
	RegisterUseRegisteredRing uint32 = 1 << 31 // IORING_REGISTER_USE_REGISTERED_RING, 6.3: fd is a registered ring index
)

// RsrcRegisterSparse in RsrcRegister.Flags registers an all-empty table
// (IORING_RSRC_REGISTER_SPARSE, 5.19).
const RsrcRegisterSparse uint32 = 1 << 0

// RsrcRegister is struct io_uring_rsrc_register (5.13), the argument of
// RegisterFiles2 and RegisterBuffers2 (Nr is passed as the size).
type RsrcRegister struct {
	Nr    uint32
	Flags uint32 // RsrcRegisterSparse
	Resv2 uint64
	Data  uint64 // address of an int32 fd array or a unix.Iovec array
	Tags  uint64 // address of a uint64 tag array, or 0
}

// RsrcUpdate is struct io_uring_rsrc_update (5.5, io_uring_files_update
// before 5.13), the argument of RegisterFilesUpdate and RegisterRingFds.
type RsrcUpdate struct {
	Offset uint32
	Resv   uint32
	Data   uint64 // address of an int32 fd array; the ring fd for RegisterRingFds
}

// ProbeOp is struct io_uring_probe_op (5.6).
type ProbeOp struct {
	Op    uint8
	Resv  uint8
	Flags uint16 // IO_URING_OP_SUPPORTED
	Resv2 uint32
}

// ProbeOpSupported is IO_URING_OP_SUPPORTED (5.6) in ProbeOp.Flags.
const ProbeOpSupported uint16 = 1 << 0

// ProbeHeader is struct io_uring_probe (5.6) without its flexible ops array.
type ProbeHeader struct {
	LastOp uint8 // highest opcode the kernel knows
	OpsLen uint8 // number of ProbeOp entries filled in
	Resv   uint16
	Resv2  [3]uint32
}

// BufReg is struct io_uring_buf_reg (5.19), the argument of RegisterPbufRing.
type BufReg struct {
	RingAddr    uint64 // page-aligned address of RingEntries io_uring_buf
	RingEntries uint32 // a power of two, at most 32768
	Bgid        uint16 // buffer group ID
	Flags       uint16 // IOU_PBUF_RING_MMAP (6.4), IOU_PBUF_RING_INC (6.12)
	Resv        [3]uint64
}

// BufReg.Flags (include/uapi/linux/io_uring.h, enum io_uring_register_pbuf_ring_flags).
const (
	PbufRingInc uint16 = 2 // IOU_PBUF_RING_INC, 6.12: buffers are consumed incrementally (CQEFBufMore)
)

// Buf is struct io_uring_buf (5.19), one entry of a provided buffer ring. The
// ring's 16-bit tail overlays Resv of entry 0 (struct io_uring_buf_ring).
type Buf struct {
	Addr uint64
	Len  uint32
	Bid  uint16
	Resv uint16
}

// Timespec is struct __kernel_timespec: 64-bit seconds and nanoseconds on
// every architecture (unlike unix.Timespec on 32-bit ones).
type Timespec struct {
	Sec  int64
	Nsec int64
}

// SyncCancelReg is struct io_uring_sync_cancel_reg (6.0), the argument of
// RegisterSyncCancel. Timeout {-1, -1} means no timeout.
type SyncCancelReg struct {
	Addr    uint64 // user_data to match (without AsyncCancelFd/Any)
	Fd      int32  // fd to match with AsyncCancelFd
	Flags   uint32 // AsyncCancel*
	Timeout Timespec
	Opcode  uint8 // opcode to match with AsyncCancelOp (6.6)
	Pad     [7]uint8
	Pad2    [3]uint64
}

// mmap offsets (IORING_OFF_*) of the three ring mappings, 5.1.
const (
	OffSQRing uint64 = 0          // IORING_OFF_SQ_RING
	OffCQRing uint64 = 0x8000000  // IORING_OFF_CQ_RING
	OffSQEs   uint64 = 0x10000000 // IORING_OFF_SQES
)
