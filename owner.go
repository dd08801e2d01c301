//go:build unix

package ringev

import (
	"errors"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
)

// ErrNotOwner is returned by the methods that only the loop's owner, the goroutine that called
// New, may call, when another goroutine calls them. The loop is left untouched.
var ErrNotOwner = errors.New("ringev: loop used from a goroutine that does not own it (queue the call with Post)")

// owned reports whether the caller is the loop's owner goroutine.
//
// The check asks whether the caller's stack is the owner's: whether the address of a local
// variable lies within the owner's stack bounds, which the runtime keeps in the owner's g
// (rawsys.GStack, read at New and checked there to hold New's own stack). Goroutine stacks
// are disjoint, and the runtime updates the bounds when the owner's stack moves (a foreign
// goroutine's read of them may race with that update, but a stack the owner left is freed,
// and can become another goroutine's, only after the update, with the runtime's
// synchronization between). It needs no call: a call costs every live register of the caller
// spilled and reloaded around it, ~30 instructions on every request (callgrind; the check
// called an assembly function that read the caller's g before). The identity is the g the
// owner runs on, which cannot be reused while the owner lives (a loop must be closed by its
// owner).
//
// Where rawsys has no assembly (rawsys.GStack is nil) the check is off, and so it would be on a runtime whose g did not start with the stack
// bounds (ownStack checks at New; TestOwnerCheckKnowsTheOwnersStack fails then). owned is
// small enough to be inlined (a fallback call in it would not be).
func (l *Loop) owned() bool {
	var probe byte
	sp, st := uintptr(unsafe.Pointer(&probe)), l.stack
	lo := st[0]
	return sp-lo < st[1]-lo
}

// anyStack is owned's bounds where the owner's are unknown: every address, the check off.
var anyStack = [2]uintptr{0, ^uintptr(0)}

// ownStack returns the calling goroutine's stack bounds as the runtime keeps them, for owned,
// or &anyStack when they do not hold the caller's own stack.
func ownStack() *[2]uintptr {
	st := rawsys.GStack()
	if st == nil {
		return &anyStack
	}
	var probe byte
	sp := uintptr(unsafe.Pointer(&probe))
	if lo, hi := st[0], st[1]; lo == 0 || hi <= lo || sp-lo >= hi-lo {
		return &anyStack
	}
	return st
}
