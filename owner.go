//go:build unix

package ringev

import (
	"errors"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
)

// ErrNotOwner is returned by the methods that only the loop's owner, the goroutine that called
// New, may call, when another goroutine calls them. The loop is left untouched.
var ErrNotOwner = errors.New("ringev: loop used from a goroutine that does not own it (the goroutine that called New owns it; others queue work for it with Post)")

// owned reports whether the caller is the loop's owner goroutine.
//
// The check asks whether the caller's stack is the owner's: whether the address of a local
// variable lies within the owner's stack bounds, which the runtime keeps in the owner's g
// (rawsys.GStack, read at New and checked there to hold New's own stack). Goroutine stacks
// are disjoint. The owner reads its own bounds whole: the runtime rewrites them only while the
// owner is stopped (its stack being copied to a larger or smaller one). Another goroutine reads
// them with no synchronization, and may read them while they change: the runtime stores the
// low bound, then the high one (two plain stores), so the other goroutine can get the low bound
// of one stack with the high bound of another (the runtime's own state between its two stores,
// or its two loads straddling a move). Such a mixed range runs from one of the owner's stacks
// to another, or wraps around the address space, and can hold the caller's own stack: the
// caller would be taken for the owner (TestOwnerCheckHoldsWhileTheOwnersStackMoves).
//
// So the range must also be as long as a goroutine stack can be: a power of two (stackalloc
// throws on any other size). The owner's range always is; a mixed one that wraps never is, and
// one that spans from a stack below the caller's to one above it is only when the bounds land
// on a power of two by chance. It costs a subtraction, an AND and a test on the owner's path,
// where another load (reading the bounds again to compare), or a call (comparing the caller's
// g with the owner's, exact, but a call costs every live register of the caller spilled and
// reloaded around it) would cost more.
//
// A stack the owner left is freed, and can become another goroutine's, only after the runtime
// stored the new bounds, with the runtime's synchronization between: the other goroutine never
// reads bounds older than its own stack. The identity is the g the owner runs on, which cannot
// be reused while the owner lives (a loop must be closed by its owner).
//
// Where rawsys has no assembly (rawsys.GStack is nil) the check is off, and so it would be on
// a runtime whose g did not start with the stack bounds (ownStack checks at New;
// TestOwnerCheckKnowsTheOwnersStack fails then). owned is small enough to be inlined (a
// fallback call in it would not be).
func (l *Loop) owned() bool {
	var probe byte
	sp, st := uintptr(unsafe.Pointer(&probe)), l.stack
	lo := st[0]
	n := st[1] - lo
	return sp-lo < n && n&(n-1) == 0
}

// anyStack is owned's bounds where the owner's are unknown: every address of a user stack (all
// lie below 1<<63), the check off.
var anyStack = [2]uintptr{0, 1 << 63}

// ownStack returns the calling goroutine's stack bounds as the runtime keeps them, for owned,
// or &anyStack when they do not hold the caller's own stack or are not a power of two apart.
func ownStack() *[2]uintptr {
	st := rawsys.GStack()
	if st == nil {
		return &anyStack
	}
	var probe byte
	sp := uintptr(unsafe.Pointer(&probe))
	if lo, hi := st[0], st[1]; lo == 0 || hi <= lo || sp-lo >= hi-lo || (hi-lo)&(hi-lo-1) != 0 {
		return &anyStack
	}
	return st
}
