//go:build unix

package server

import "time"

// Protocol is one server protocol for the connections of one loop. Serve is called on the loop's
// goroutine only, so a Protocol needs no locking of its own (state it shares with other loops,
// such as the RESP keyspace, has its own lock).
type Protocol interface {
	// Serve parses the complete requests at the start of in, in order, and appends each reply
	// to out. It returns how many bytes of in it consumed (the rest, an incomplete request, is
	// given again, with more bytes after it, on the next call), out with the replies appended,
	// and closeAfter: the connection must be closed once out is written (the client asked for
	// it, or sent something the protocol cannot go on from; the reply saying so is in out).
	//
	// Serve stops after the reply that brings len(out) to OutputLimit or beyond, leaving the
	// other requests in in, so that pending output stays bounded; the driver calls it again
	// once out has been written. When in holds no complete request and is longer than the
	// protocol's own limit, Serve must return closeAfter (with an error reply or none): the
	// input buffer of a connection never grows past that limit plus one read.
	//
	// in and out do not overlap; Serve keeps no reference to either after it returns.
	Serve(in, out []byte) (consumed int, reply []byte, closeAfter bool)
}

// Ticker is a Protocol that needs the wall-clock time once a second (HTTP's Date header): the
// driver calls Tick when it starts and then from a loop timer every TickInterval.
type Ticker interface {
	Tick(now time.Time)
}

// TickInterval is how often the driver calls a Ticker's Tick.
const TickInterval = time.Second

// OutputLimit is the pending output, in bytes, beyond which a connection's requests are no longer
// served (and its socket no longer read) until the output has been written: 256 KiB. Pending
// output stays below OutputLimit plus one reply (a reply can be larger: LRANGE of a long list).
const OutputLimit = 256 << 10

// MaxInput is the driver's own cap on a connection's unparsed input, in bytes (4 MiB), above every
// protocol's limit (MaxRESPRequest, MaxHeaderBytes+MaxBodyBytes): a connection whose protocol
// left that much unconsumed is closed without a reply.
const MaxInput = 4 << 20
