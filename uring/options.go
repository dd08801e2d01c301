package uring

// DefaultEntries is the SQ size New asks for when WithEntries is not given.
const DefaultEntries = 256

// config is what the Options of New set.
type config struct {
	entries   uint32 // SQ entries asked for (the kernel rounds up to a power of two)
	cqEntries uint32 // CQ entries; 0: the kernel default (2 x SQ entries)
	flags     uint32 // exact setup flags when exact is set
	exact     bool   // true after WithFlags: no trial
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
// WithCQEntries is also given. Flags that change the ring layout
// (SetupSQE128, SetupCQE32, SetupCQEMixed, SetupNoMmap, SetupNoSQArray,
// SetupRegisteredFdOnly) are not supported by this binding and make New fail
// with an error wrapping unix.EINVAL.
func WithFlags(flags uint32) Option {
	return func(c *config) { c.flags, c.exact = flags, true }
}
