//go:build unix

package server

import (
	"strconv"
	"strings"
	"time"
)

// RESP is a small Redis, a Handler: the RESP2 protocol (multibulk and inline commands,
// pipelining) over a Keyspace, with the commands redis-benchmark's default run sends and a few
// more: PING, ECHO, SET (no options), GET, INCR, DEL, MSET, LPUSH, RPUSH, LPOP, RPOP, LRANGE,
// SADD, SPOP, HSET, ZADD (no flags), ZPOPMIN, CONFIG GET (save and appendonly, which
// redis-benchmark asks first), DBSIZE, FLUSHALL and QUIT. Replies and error texts are Redis
// 7.0's, checked against redis-server 7.0.15: "ERR unknown command 'x', with args beginning
// with: 'a' ", "ERR wrong number of arguments for 'get' command", "WRONGTYPE Operation against
// a key holding the wrong kind of value", "ERR Protocol error: invalid multibulk length" (after
// which the connection is closed), ...
//
// One RESP serves every loop of an engine; several may share a Keyspace. Idle connections are
// kept, as Redis keeps them (its timeout 0), unless IdleTimeout is set.
type RESP struct {
	// IdleTimeout, if not 0, closes a connection on which nothing was received or sent for
	// that long (Conn.SetIdleTimeout, set in OnOpen); 0 leaves the engine's (WithIdleTimeout).
	IdleTimeout time.Duration
	// RequestTimeout, if not 0, closes a connection whose command is not complete within that
	// long of its first byte (Conn.SetRequestTimeout); 0 leaves the engine's
	// (WithRequestTimeout).
	RequestTimeout time.Duration

	ks *Keyspace
	// Under ks.mu: the parser's reused buffers, and a command name in lower case, to look it
	// up without allocating.
	parser respParser
	lower  [16]byte
}

// NewRESP returns a RESP server over ks, with no timeouts of its own.
func NewRESP(ks *Keyspace) *RESP { return &RESP{ks: ks} }

// OnOpen sets the connection's timeouts (IdleTimeout, RequestTimeout) where they are not 0.
func (r *RESP) OnOpen(c *Conn) { setTimeouts(c, r.IdleTimeout, r.RequestTimeout) }

// OnData runs the complete commands of the connection's input and writes their replies, in
// order. It stops once the pending output passes the connection's write limit, leaving the
// other commands for the call that follows the output's drain. A protocol error writes
// Redis's error reply and closes the connection, as QUIT does after its +OK; a command larger
// than MaxRESPRequest closes it without a reply.
func (r *RESP) OnData(c *Conn) {
	in, out := c.Buffers()
	room := c.WriteLimit() - c.Pending()
	r.ks.mu.Lock()
	used, out, closeAfter := r.serve(in, out, room+1)
	r.ks.mu.Unlock()
	c.Commit(used, out)
	if closeAfter {
		c.Close()
	}
}

// serve runs the commands at the start of in, appending their replies to out, until len(out)
// reaches limit (or in holds no complete command). It returns the bytes of in consumed, out,
// and closeAfter: a protocol error (its reply appended), QUIT, or a command over
// MaxRESPRequest (no reply) ends the connection. The caller holds r.ks.mu.
func (r *RESP) serve(in, out []byte, limit int) (int, []byte, bool) {
	used := 0
	for used < len(in) && len(out) < limit {
		args, n, err := r.parser.next(in[used:])
		if pe, ok := err.(protocolError); ok {
			return len(in), appendError(out, "ERR "+pe.Error()), true
		}
		if err != nil { // errRequestTooBig
			return len(in), out, true
		}
		if n == 0 {
			break
		}
		used += n
		if len(args) == 0 {
			continue
		}
		var quit bool
		out, quit = r.run(args, out)
		if quit {
			return len(in), out, true
		}
	}
	return used, out, false
}

// setTimeouts sets c's idle and request timeouts where they are not 0 (OnOpen of RESP and HTTP).
func setTimeouts(c *Conn, idle, request time.Duration) {
	if idle != 0 {
		c.SetIdleTimeout(idle)
	}
	if request != 0 {
		c.SetRequestTimeout(request)
	}
}

// command is one entry of the command table.
type command struct {
	// arity follows Redis: N > 0 means exactly N arguments (the name included), -N at least N.
	arity int
	run   func(ks *Keyspace, args [][]byte, out []byte) []byte
}

func cmdEcho(_ *Keyspace, a [][]byte, out []byte) []byte { return appendBulk(out, a[1]) }
func cmdDbsize(ks *Keyspace, _ [][]byte, out []byte) []byte {
	return appendInt(out, int64(len(ks.keys)))
}
func cmdFlushall(ks *Keyspace, _ [][]byte, out []byte) []byte {
	clear(ks.keys)
	return append(out, "+OK\r\n"...)
}
func cmdQuit(_ *Keyspace, _ [][]byte, out []byte) []byte { return append(out, "+OK\r\n"...) }

// lookup returns the command of a lower-case name. A switch, which the compiler turns into a
// search by length and then by content, costs a fraction of a map lookup's hashing.
func lookup(name []byte) (command, bool) {
	switch string(name) {
	case "ping":
		return command{-1, cmdPing}, true
	case "echo":
		return command{2, cmdEcho}, true
	case "set":
		return command{-3, cmdSet}, true
	case "get":
		return command{2, cmdGet}, true
	case "incr":
		return command{2, cmdIncr}, true
	case "del":
		return command{-2, cmdDel}, true
	case "mset":
		return command{-3, cmdMset}, true
	case "lpush", "rpush":
		return command{-3, cmdPush}, true
	case "lpop", "rpop":
		return command{-2, cmdPop}, true
	case "lrange":
		return command{4, cmdLrange}, true
	case "sadd":
		return command{-3, cmdSadd}, true
	case "spop":
		return command{-2, cmdSpop}, true
	case "hset":
		return command{-4, cmdHset}, true
	case "zadd":
		return command{-4, cmdZadd}, true
	case "zpopmin":
		return command{-2, cmdZpopmin}, true
	case "dbsize":
		return command{1, cmdDbsize}, true
	case "flushall":
		return command{-1, cmdFlushall}, true
	case "config":
		return command{-2, cmdConfig}, true
	case "quit":
		return command{-1, cmdQuit}, true
	}
	return command{}, false
}

// run runs one command; quit is true for QUIT (its +OK is in out).
func (r *RESP) run(args [][]byte, out []byte) (_ []byte, quit bool) {
	name := args[0]
	if len(name) <= len(r.lower) {
		lower := r.lower[:len(name)]
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			lower[i] = c
		}
		name = lower
	}
	cmd, ok := lookup(name)
	if !ok {
		return appendError(out, unknownCommand(args)), false
	}
	if cmd.arity > 0 && len(args) != cmd.arity || cmd.arity < 0 && len(args) < -cmd.arity {
		return appendError(out, "ERR wrong number of arguments for '"+string(name)+"' command"), false
	}
	return cmd.run(r.ks, args, out), string(name) == "quit"
}

// unknownCommand is Redis's error for a command it does not know, with the first arguments
// quoted (up to about 128 bytes of them).
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(args[0][:min(len(args[0]), 128)])
	b.WriteString("', with args beginning with: ")
	quoted := 0
	for _, a := range args[1:] {
		if quoted >= 128 {
			break
		}
		a = a[:min(len(a), 128-quoted)]
		b.WriteString("'")
		b.Write(a)
		b.WriteString("' ")
		quoted += len(a) + 3
	}
	return b.String()
}

// config answers CONFIG GET for the parameters redis-benchmark asks about (an empty array for the
// others, as Redis answers an unknown name) and refuses the other subcommands.
func cmdConfig(_ *Keyspace, args [][]byte, out []byte) []byte {
	if !strings.EqualFold(string(args[1]), "get") {
		return appendError(out, "ERR unknown subcommand '"+string(args[1][:min(len(args[1]), 128)])+"'. Try CONFIG HELP.")
	}
	if len(args) < 3 {
		return appendError(out, "ERR wrong number of arguments for 'config|get' command")
	}
	var pairs []string
	for _, p := range args[2:] {
		switch strings.ToLower(string(p)) {
		case "save":
			pairs = append(pairs, "save", "")
		case "appendonly":
			pairs = append(pairs, "appendonly", "no")
		}
	}
	out = appendArray(out, len(pairs))
	for _, s := range pairs {
		out = appendBulkString(out, s)
	}
	return out
}

// The reply encoders of RESP2.

// appendError appends an error reply; '\r' and '\n' in msg become spaces, as Redis makes them.
func appendError(out []byte, msg string) []byte {
	out = append(out, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		out = append(out, c)
	}
	return append(out, '\r', '\n')
}

func appendInt(out []byte, n int64) []byte {
	out = append(out, ':')
	out = strconv.AppendInt(out, n, 10)
	return append(out, '\r', '\n')
}

func appendArray(out []byte, n int) []byte {
	out = append(out, '*')
	out = strconv.AppendInt(out, int64(n), 10)
	return append(out, '\r', '\n')
}

func appendBulk(out, b []byte) []byte {
	out = append(out, '$')
	out = strconv.AppendInt(out, int64(len(b)), 10)
	out = append(out, '\r', '\n')
	out = append(out, b...)
	return append(out, '\r', '\n')
}

func appendBulkString(out []byte, s string) []byte {
	out = append(out, '$')
	out = strconv.AppendInt(out, int64(len(s)), 10)
	out = append(out, '\r', '\n')
	out = append(out, s...)
	return append(out, '\r', '\n')
}

const (
	nullBulk  = "$-1\r\n"
	nullArray = "*-1\r\n"
	wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	notInt    = "ERR value is not an integer or out of range"
)
