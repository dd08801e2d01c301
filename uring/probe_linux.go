package uring

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/internal/kernel"
)

// Named is a kernel constant with its io_uring.h name and the release that
// added it.
type Named struct {
	Name  string `json:"name"`
	Since string `json:"since"`
}

// opNames are the opcodes in kernel order (index = opcode).
var opNames = [...]Named{
	OpNop: {"NOP", "5.1"}, OpReadv: {"READV", "5.1"}, OpWritev: {"WRITEV", "5.1"},
	OpFsync: {"FSYNC", "5.1"}, OpReadFixed: {"READ_FIXED", "5.1"}, OpWriteFixed: {"WRITE_FIXED", "5.1"},
	OpPollAdd: {"POLL_ADD", "5.1"}, OpPollRemove: {"POLL_REMOVE", "5.1"},
	OpSyncFileRange: {"SYNC_FILE_RANGE", "5.2"}, OpSendmsg: {"SENDMSG", "5.3"}, OpRecvmsg: {"RECVMSG", "5.3"},
	OpTimeout: {"TIMEOUT", "5.4"}, OpTimeoutRemove: {"TIMEOUT_REMOVE", "5.5"}, OpAccept: {"ACCEPT", "5.5"},
	OpAsyncCancel: {"ASYNC_CANCEL", "5.5"}, OpLinkTimeout: {"LINK_TIMEOUT", "5.5"}, OpConnect: {"CONNECT", "5.5"},
	OpFallocate: {"FALLOCATE", "5.6"}, OpOpenat: {"OPENAT", "5.6"}, OpClose: {"CLOSE", "5.6"},
	OpFilesUpdate: {"FILES_UPDATE", "5.6"}, OpStatx: {"STATX", "5.6"}, OpRead: {"READ", "5.6"},
	OpWrite: {"WRITE", "5.6"}, OpFadvise: {"FADVISE", "5.6"}, OpMadvise: {"MADVISE", "5.6"},
	OpSend: {"SEND", "5.6"}, OpRecv: {"RECV", "5.6"}, OpOpenat2: {"OPENAT2", "5.6"},
	OpEpollCtl: {"EPOLL_CTL", "5.6"}, OpSplice: {"SPLICE", "5.7"}, OpProvideBuffers: {"PROVIDE_BUFFERS", "5.7"},
	OpRemoveBuffers: {"REMOVE_BUFFERS", "5.7"}, OpTee: {"TEE", "5.8"}, OpShutdown: {"SHUTDOWN", "5.11"},
	OpRenameat: {"RENAMEAT", "5.11"}, OpUnlinkat: {"UNLINKAT", "5.11"}, OpMkdirat: {"MKDIRAT", "5.15"},
	OpSymlinkat: {"SYMLINKAT", "5.15"}, OpLinkat: {"LINKAT", "5.15"}, OpMsgRing: {"MSG_RING", "5.18"},
	OpFsetxattr: {"FSETXATTR", "5.19"}, OpSetxattr: {"SETXATTR", "5.19"}, OpFgetxattr: {"FGETXATTR", "5.19"},
	OpGetxattr: {"GETXATTR", "5.19"}, OpSocket: {"SOCKET", "5.19"}, OpUringCmd: {"URING_CMD", "5.19"},
	OpSendZC: {"SEND_ZC", "6.0"}, OpSendmsgZC: {"SENDMSG_ZC", "6.1"}, OpReadMultishot: {"READ_MULTISHOT", "6.7"},
	OpWaitid: {"WAITID", "6.7"}, OpFutexWait: {"FUTEX_WAIT", "6.7"}, OpFutexWake: {"FUTEX_WAKE", "6.7"},
	OpFutexWaitv: {"FUTEX_WAITV", "6.7"}, OpFixedFdInstall: {"FIXED_FD_INSTALL", "6.8"},
	OpFtruncate: {"FTRUNCATE", "6.9"}, OpBind: {"BIND", "6.11"}, OpListen: {"LISTEN", "6.11"},
	OpRecvZC: {"RECV_ZC", "6.15"}, OpEpollWait: {"EPOLL_WAIT", "6.15"}, OpReadvFixed: {"READV_FIXED", "6.15"},
	OpWritevFixed: {"WRITEV_FIXED", "6.15"}, OpPipe: {"PIPE", "6.16"},
}

// OpName returns the io_uring.h name of an opcode without its IORING_OP_
// prefix ("POLL_ADD"), or "op N" for one this binding does not know.
func OpName(op uint8) string {
	if int(op) < len(opNames) {
		return opNames[op].Name
	}
	return "op " + strconv.Itoa(int(op))
}

// bitNames names bits 0, 1, ... of a flag word.
type bitNames []Named

var featureNames = bitNames{
	{"SINGLE_MMAP", "5.4"}, {"NODROP", "5.5"}, {"SUBMIT_STABLE", "5.5"}, {"RW_CUR_POS", "5.6"},
	{"CUR_PERSONALITY", "5.6"}, {"FAST_POLL", "5.7"}, {"POLL_32BITS", "5.9"}, {"SQPOLL_NONFIXED", "5.11"},
	{"EXT_ARG", "5.11"}, {"NATIVE_WORKERS", "5.12"}, {"RSRC_TAGS", "5.13"}, {"CQE_SKIP", "5.17"},
	{"LINKED_FILE", "5.17"}, {"REG_REG_RING", "6.3"}, {"RECVSEND_BUNDLE", "6.10"}, {"MIN_TIMEOUT", "6.12"},
	{"RW_ATTR", "6.14"}, {"NO_IOWAIT", "6.15"},
}

var setupNames = bitNames{
	{"IOPOLL", "5.1"}, {"SQPOLL", "5.1"}, {"SQ_AFF", "5.1"}, {"CQSIZE", "5.5"}, {"CLAMP", "5.6"},
	{"ATTACH_WQ", "5.6"}, {"R_DISABLED", "5.10"}, {"SUBMIT_ALL", "5.18"}, {"COOP_TASKRUN", "5.19"},
	{"TASKRUN_FLAG", "5.19"}, {"SQE128", "5.19"}, {"CQE32", "5.19"}, {"SINGLE_ISSUER", "6.0"},
	{"DEFER_TASKRUN", "6.1"}, {"NO_MMAP", "6.5"}, {"REGISTERED_FD_ONLY", "6.5"}, {"NO_SQARRAY", "6.6"},
	{"HYBRID_IOPOLL", "6.13"}, {"CQE_MIXED", "6.18"},
}

// names returns the names of the bits set in v ("bit N" for unknown ones).
func (b bitNames) names(v uint32) []string {
	var out []string
	for i := 0; i < 32; i++ {
		if v&(1<<i) == 0 {
			continue
		}
		if i < len(b) {
			out = append(out, b[i].Name)
		} else {
			out = append(out, "bit "+strconv.Itoa(i))
		}
	}
	return out
}

// FeatureNames returns the names of the IORING_FEAT_* bits set in f
// ("NODROP", "EXT_ARG", ...; "bit N" for bits this binding does not know).
func FeatureNames(f uint32) []string { return featureNames.names(f) }

// SetupFlagNames returns the names of the IORING_SETUP_* bits set in f.
func SetupFlagNames(f uint32) []string { return setupNames.names(f) }

// Probe is what IORING_REGISTER_PROBE (5.6) reports: which opcodes this
// kernel supports.
type Probe struct {
	lastOp    uint8
	supported [256]bool
}

// probeBuf is struct io_uring_probe with room for every opcode.
type probeBuf struct {
	hdr ProbeHeader
	ops [256]ProbeOp
}

// Probe asks the kernel which opcodes it supports (IORING_REGISTER_PROBE,
// 5.6; see io_uring_get_probe(3)). Errors wrap the register errno
// (unix.EINVAL from kernels before 5.6).
func (r *Ring) Probe() (*Probe, error) {
	buf := new(probeBuf)
	if _, err := r.doRegister(RegisterProbe, unsafe.Pointer(buf), uint32(len(buf.ops))); err != nil {
		return nil, err
	}
	p := &Probe{lastOp: buf.hdr.LastOp}
	for _, o := range buf.ops[:buf.hdr.OpsLen] {
		if o.Flags&ProbeOpSupported != 0 {
			p.supported[o.Op] = true
		}
	}
	return p, nil
}

// OpSupported reports whether the kernel supports opcode op.
func (p *Probe) OpSupported(op uint8) bool { return p.supported[op] }

// LastOp returns the highest opcode the kernel knows.
func (p *Probe) LastOp() uint8 { return p.lastOp }

// ErrOpNotSupported is wrapped by RequireOp's error.
var ErrOpNotSupported = errors.New("io_uring op not supported by this kernel")

// RequireOp returns nil if the kernel supports op, or an error naming the op
// and the release that added it, wrapping ErrOpNotSupported and
// unix.EOPNOTSUPP.
func (p *Probe) RequireOp(op uint8) error {
	if p.OpSupported(op) {
		return nil
	}
	since := "?"
	if int(op) < len(opNames) {
		since = opNames[op].Since
	}
	return fmt.Errorf("uring: IORING_OP_%s (%s): %w (%w)", OpName(op), since, ErrOpNotSupported, unix.EOPNOTSUPP)
}

// KernelReport is what ProbeKernel finds out about this kernel's io_uring.
type KernelReport struct {
	Kernel   string `json:"kernel"`            // uname release
	Disabled int    `json:"io_uring_disabled"` // sysctl kernel.io_uring_disabled (6.6), -1 if absent
	Usable   bool   `json:"usable"`            // an io_uring could be created
	Reason   string `json:"reason,omitempty"`  // why not, when not usable
	Features []Flag `json:"features"`          // every IORING_FEAT_* bit known here, set or not
	Setup    []Flag `json:"setup_flags"`       // every IORING_SETUP_* flag, tried one at a time
	LastOp   int    `json:"last_op"`           // highest opcode the kernel knows
	Ops      []Op   `json:"ops"`               // every opcode, by name
}

// Flag is one feature bit or setup flag in a KernelReport.
type Flag struct {
	Named
	Bit  int    `json:"bit"`
	Set  bool   `json:"set"`            // feature present / setup flag accepted
	With string `json:"with,omitempty"` // setup: the flags it needs, tried together
	Err  string `json:"error,omitempty"`
}

// Op is one opcode in a KernelReport.
type Op struct {
	Named
	Code      int  `json:"code"`
	Supported bool `json:"supported"`
}

// ProbeKernel reports the kernel release, whether io_uring is usable (and
// why not: kernel.io_uring_disabled, EPERM, ENOSYS), the IORING_FEAT_* bits,
// each IORING_SETUP_* flag accepted or not (tried one at a time, with only
// the flags it requires), and each opcode supported or not. It creates and
// closes small rings; it locks the calling goroutine to its thread while it
// runs (REGISTERED_FD_ONLY registers the ring in the thread). It never
// fails: what it cannot find out is reported as such.
func ProbeKernel() KernelReport {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var rep KernelReport
	rep.Kernel = kernel.Release()
	rep.Disabled = ioUringDisabled()
	var p Params
	fd, err := setup(1, &p)
	if err != nil {
		rep.Reason = unusableReason(err, rep.Disabled)
		return rep
	}
	rep.Usable = true
	r, err := newRing(fd, &p)
	if err != nil {
		rep.Reason = "mapping a ring failed: " + err.Error()
		return rep
	}
	defer r.Close()
	for i, n := range featureNames {
		rep.Features = append(rep.Features, Flag{Named: n, Bit: i, Set: p.Features&(1<<i) != 0})
	}
	for i := len(featureNames); i < 32; i++ {
		if p.Features&(1<<i) != 0 {
			rep.Features = append(rep.Features, Flag{Named: Named{Name: "bit " + strconv.Itoa(i)}, Bit: i, Set: true})
		}
	}
	for i, n := range setupNames {
		f := Flag{Named: n, Bit: i}
		with, err := trySetupFlag(1<<i, r.fd)
		f.Set = err == nil
		f.With = strings.Join(SetupFlagNames(with), "|")
		if err != nil {
			f.Err = err.Error()
		}
		rep.Setup = append(rep.Setup, f)
	}
	probe, err := r.Probe()
	if err != nil {
		rep.Reason = "IORING_REGISTER_PROBE failed: " + err.Error()
		return rep
	}
	rep.LastOp = int(probe.LastOp())
	for op := 0; op <= max(rep.LastOp, len(opNames)-1); op++ {
		n := Named{Name: OpName(uint8(op)), Since: "?"}
		if op < len(opNames) {
			n = opNames[op]
		}
		rep.Ops = append(rep.Ops, Op{Named: n, Code: op, Supported: probe.OpSupported(uint8(op))})
	}
	return rep
}

// ioUringDisabled reads sysctl kernel.io_uring_disabled (6.6): 0, 1 or 2; -1 where it is absent.
func ioUringDisabled() int {
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return v
		}
	}
	return -1
}

// unusableReason explains a failed io_uring_setup.
func unusableReason(err error, disabled int) string {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return "io_uring_setup: ENOSYS: the kernel has no io_uring (CONFIG_IO_URING off, or blocked by seccomp)"
	case errors.Is(err, unix.EPERM) && disabled == 2:
		return "io_uring_setup: EPERM: disabled for everyone by sysctl kernel.io_uring_disabled=2"
	case errors.Is(err, unix.EPERM) && disabled == 1:
		return "io_uring_setup: EPERM: sysctl kernel.io_uring_disabled=1 allows only CAP_SYS_ADMIN and group kernel.io_uring_group"
	case errors.Is(err, unix.EPERM):
		return "io_uring_setup: EPERM: refused (seccomp or LSM policy)"
	}
	return err.Error()
}

// trySetupFlag creates (and closes) a one-entry ring with setup flag flag and
// the flags it requires; it returns those extra flags and the setup error.
// wqFd is a ring to attach to for ATTACH_WQ.
func trySetupFlag(flag uint32, wqFd int) (uint32, error) {
	var p Params
	var with uint32
	switch flag {
	case SetupSQAff:
		with = SetupSQPoll
		p.SQThreadCPU = 0
	case SetupCQSize:
		p.CQEntries = 2
	case SetupAttachWQ:
		p.WQFd = uint32(wqFd)
	case SetupTaskrunFlag:
		with = SetupCoopTaskrun
	case SetupDeferTaskrun:
		with = SetupSingleIssuer
	case SetupHybridIOPoll:
		with = SetupIOPoll
	case SetupRegisteredFdOnly:
		with = SetupNoMmap
	}
	p.Flags = flag | with
	if p.Flags&SetupNoMmap != 0 {
		// The application provides the memory: one page for the SQEs, one
		// for the rings (enough for one entry).
		pg := os.Getpagesize()
		sqes, err := unix.Mmap(-1, 0, pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANONYMOUS|unix.MAP_PRIVATE|unix.MAP_POPULATE)
		if err != nil {
			return with, err
		}
		defer unix.Munmap(sqes)
		rings, err := unix.Mmap(-1, 0, pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANONYMOUS|unix.MAP_PRIVATE|unix.MAP_POPULATE)
		if err != nil {
			return with, err
		}
		defer unix.Munmap(rings)
		p.SQOff.UserAddr = uint64(uintptr(unsafe.Pointer(&sqes[0])))
		p.CQOff.UserAddr = uint64(uintptr(unsafe.Pointer(&rings[0])))
	}
	fd, err := setup(1, &p)
	if err != nil {
		return with, err
	}
	if p.Flags&SetupRegisteredFdOnly != 0 {
		// fd is an index in this thread's registered rings: unregister it,
		// which drops the last reference to the ring.
		upd := RsrcUpdate{Offset: uint32(fd)}
		_, err := sysRegister(fd, UnregisterRingFds|RegisterUseRegisteredRing, unsafe.Pointer(&upd), 1)
		return with, err
	}
	unix.Close(fd)
	return with, nil
}
