// Package onloop holds Proof, the parameter that marks the root package's calls meant for
// package server alone: calls whose caller runs on the loop's goroutine already (a loop's
// callback, after a public call of server checked its caller), so that they need not check it
// again. Outside this module no code can name Proof nor make one that holds (Given): a zero
// Proof, which a type parameter can make anywhere, makes the call check its caller as usual.
package onloop

// Proof is a caller's word that it runs on the goroutine of the loop it calls: the
// goroutine that owns it. A call given a Proof that holds does not check its caller; a caller
// that is not the owner corrupts the loop's state, as a data race does. Its field keeps a
// struct literal of another package from being one (struct{}{} would be assignable to an
// empty struct type).
type Proof struct{ given bool }

// Given returns a Proof that holds: call it only on the loop's goroutine.
func Given() Proof { return Proof{given: true} }

// Holds reports whether p came from Given (not a zero Proof).
func (p Proof) Holds() bool { return p.given }
