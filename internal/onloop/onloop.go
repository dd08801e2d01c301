// Package onloop holds Proof, the parameter that marks the root package's calls meant for
// package server alone: calls whose caller runs on the loop's goroutine already (a loop's
// callback, after a public call of server checked its caller), so that they need not check it
// again. Outside this module no code can name Proof, so none can call them.
package onloop

// Proof is a caller's word that it runs on the goroutine of the loop it calls: the
// goroutine that owns it. A call given a Proof does not check its caller; a caller that is
// not the owner corrupts the loop's state, as a data race does.
type Proof struct{}
