// Package server holds network servers written on ringev's loop: RESP (a small Redis), HTTP/1.1
// plaintext (TechEmpower's rules) and echo. They exist to measure the loop against real clients
// (redis-benchmark, wrk; see `ringev serve` and `ringev bench net`) and to show how a server is
// written on it.
//
// A server has two halves that know nothing of each other:
//
//   - the protocol (resp.go, http.go, echo.go): a Protocol turns the bytes a connection received
//     into the bytes of its replies (parse, then append to an output buffer). It makes no
//     syscall and does not know how the bytes came or go;
//   - the connection driver: it accepts connections, reads, hands the bytes to the Protocol,
//     writes what it returned. Two drivers serve every Protocol unchanged (Config.API): the
//     requests driver (requests.go, the default) does its I/O with the loop's completion
//     requests (a multishot accept, a recv per connection, Send, CloseFd); the readiness
//     driver (readiness.go) with fd events and the loop's non-blocking I/O
//     (Loop.ReadNonblocking/WriteNonblocking).
//
// Start runs one driver per loop, on as many loops (OS threads) as asked, each with its own
// SO_REUSEPORT listening socket.
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
