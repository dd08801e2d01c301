package ringev

import (
	"errors"

	"github.com/ringev/ringev/internal/rawsys"
)

// ErrNotOwner is returned by a Loop's methods (other than Post and Stop) when they are called
// from a goroutine other than the one that called New. The loop is left untouched.
var ErrNotOwner = errors.New("ringev: loop used from a goroutine that does not own it (only Post and Stop are safe from other goroutines)")

// owned reports whether the caller is the loop's owner goroutine.
// The identity compared is the address of the goroutine's runtime g, read from thread-local
// storage by rawsys.Getg: cheap enough for every Once. The g of the owner cannot be reused
// while the owner lives, and a loop must be closed by its owner. (Where rawsys has no assembly,
// Getg is 0 and the check is off.)
func (l *Loop) owned() bool { return l.owner == rawsys.Getg() }
