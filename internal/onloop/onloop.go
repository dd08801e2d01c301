// Package onloop holds the root package's calls meant for package server alone: calls without
// the root's check of their caller, made where the caller runs on the loop's goroutine
// already (a loop's callback, after a public call of server checked its caller), so that they
// need not check it again. Being internal, it keeps them from code outside this module, which
// gets only the root's checked calls (Loop.Send, BufferGroup.Release).
package onloop

// Send and Release are set by package ringev as it is initialized, before any package that
// imports it: Send is Loop.Send without its check of the caller, a
//
//	func(l *ringev.Loop, fd int, buf []byte, flags int, cb ringev.Callback, token uint64) (ringev.Request, error)
//
// and Release is BufferGroup.Release without it, a
//
//	func(g *ringev.BufferGroup, id int)
//
// Their types cannot be named here (package ringev imports this package): package server
// asserts them once, into variables of their own. A caller that does not own the loop
// corrupts its state, as a data race does.
var Send, Release any
