//go:build linux

package uring

import "time"

// DefaultEntries is the SQ size New asks for when WithEntries is not given.
const DefaultEntries = 256

// config is what the Options of New set.
type config struct {
	entries   uint32 // SQ entries asked for (the kernel rounds up to a power of two)
	cqEntries uint32 // CQ entries; 0: the kernel default (2 x SQ entries)
	flags     uint32 // exact setup flags when exact is set
	exact     bool   // true after WithFlags: no trial

	sqPoll   bool   // IORING_SETUP_SQPOLL
	sqIdleMs uint32 // Params.SQThreadIdle, milliseconds (0: the kernel's 1 s)
	sqCPU    int    // Params.SQThreadCPU when sqAff
	sqAff    bool   // IORING_SETUP_SQ_AFF
	wqFd     int    // Params.WQFd when attachWQ
	attachWQ bool   // IORING_SETUP_ATTACH_WQ
}

// Option configures New.
type Option func(*config)

// WithEntries sets the number of SQ entries (default DefaultEntries). The
// kernel rounds it up to a power of two; more than 32768 fails with EINVAL.
func WithEntries(n uint32) Option {
	return func(c *config) { c.entries = n }
}

// WithCQEntries sets the number of CQ entries (IORING_SETUP_CQSIZE, 5.5); it
// must be at least the SQ entries. Without it the kernel uses twice the SQ
// entries.
func WithCQEntries(n uint32) Option {
	return func(c *config) { c.cqEntries = n }
}

// WithFlags makes New use exactly these setup flags (IORING_SETUP_*) instead
// of trying the preferred sets in turn. SetupCQSize is added when
// WithCQEntries is also given, and the SQPOLL flags when WithSQPoll,
// WithSQThreadCPU or WithAttachWQ are. Flags that change the ring layout
// (SetupSQE128, SetupCQE32, SetupCQEMixed, SetupNoMmap, SetupNoSQArray,
// SetupRegisteredFdOnly) are not supported by this binding and make New fail
// with an error wrapping unix.EINVAL.
func WithFlags(flags uint32) Option {
	return func(c *config) { c.flags, c.exact = flags, true }
}

// WithSQPoll asks for a kernel submission-queue polling thread
// (IORING_SETUP_SQPOLL, 5.1; unprivileged since 5.11, see io_uring_setup(2)).
// The thread goes to sleep after idle without work and sets
// IORING_SQ_NEED_WAKEUP (see Ring.SQThreadSleeping); Submit then wakes it with
// IORING_ENTER_SQ_WAKEUP, and only then. The kernel's unit is milliseconds:
// idle is rounded up to a whole millisecond, and 0 means the kernel's default
// of one second. DEFER_TASKRUN and COOP_TASKRUN cannot be combined with SQPOLL
// (the kernel rejects them with EINVAL), so New then tries
// SQPOLL|SINGLE_ISSUER, then SQPOLL alone.
func WithSQPoll(idle time.Duration) Option {
	return func(c *config) {
		c.sqPoll = true
		if idle > 0 {
			c.sqIdleMs = uint32((idle + time.Millisecond - 1) / time.Millisecond)
		}
	}
}

// WithSQThreadCPU pins the SQPOLL thread to cpu (IORING_SETUP_SQ_AFF, 5.1). It
// implies WithSQPoll (idle 0, the kernel default) unless WithSQPoll is also
// given. A CPU outside the allowed set fails New with an error wrapping
// unix.EINVAL.
func WithSQThreadCPU(cpu int) Option {
	return func(c *config) { c.sqPoll, c.sqAff, c.sqCPU = true, true, cpu }
}

// WithAttachWQ makes the new ring share the async backend (io-wq, and with
// SQPOLL the SQ thread) of the ring whose fd is fd (IORING_SETUP_ATTACH_WQ,
// 5.6; sharing the SQPOLL thread since 5.12). An fd that is not an io_uring
// fails New with an error wrapping unix.EINVAL (or EBADF).
func WithAttachWQ(fd int) Option {
	return func(c *config) { c.attachWQ, c.wqFd = true, fd }
}

// setupExtra returns the setup flags and Params fields the SQPOLL options add.
func (c *config) setupExtra(p *Params) uint32 {
	var f uint32
	if c.sqPoll {
		f |= SetupSQPoll
		p.SQThreadIdle = c.sqIdleMs
	}
	if c.sqAff {
		f |= SetupSQAff
		p.SQThreadCPU = uint32(c.sqCPU)
	}
	if c.attachWQ {
		f |= SetupAttachWQ
		p.WQFd = uint32(c.wqFd)
	}
	return f
}
