//go:build unix

package server

import (
	"encoding/binary"
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
	// Under ks.mu: the parser's reused buffers.
	parser respParser
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
		var args [][]byte
		var n int
		var ok bool
		if rest := in[used:]; rest[0] == '*' { // the fast paths first, then nextSlow
			args, n, ok = r.parser.multibulkFast(rest)
		} else {
			args, n, ok = r.parser.inlineFast(rest)
		}
		if !ok {
			var err error
			args, n, err = r.parser.nextSlow(in[used:])
			if pe, ok := err.(protocolError); ok {
				return len(in), appendError(out, "ERR "+pe.Error()), true
			}
			if err != nil { // errRequestTooBig
				return len(in), out, true
			}
			if n == 0 {
				break
			}
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
	name string // in lower case: the error replies quote it so
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

// The command table, and the index of QUIT in it.
var commands = [...]command{
	{"ping", -1, cmdPing}, {"echo", 2, cmdEcho}, {"set", -3, cmdSet}, {"get", 2, cmdGet},
	{"incr", 2, cmdIncr}, {"del", -2, cmdDel}, {"mset", -3, cmdMset},
	{"lpush", -3, cmdPush}, {"rpush", -3, cmdPush}, {"lpop", -2, cmdPop}, {"rpop", -2, cmdPop},
	{"lrange", 4, cmdLrange}, {"sadd", -3, cmdSadd}, {"spop", -2, cmdSpop}, {"hset", -4, cmdHset},
	{"zadd", -4, cmdZadd}, {"zpopmin", -2, cmdZpopmin}, {"dbsize", 1, cmdDbsize},
	{"flushall", -1, cmdFlushall}, {"config", -2, cmdConfig}, {"quit", -1, cmdQuit},
}

const cmdQuitIndex = len(commands) - 1

// nameKey packs a name of 1 to 8 bytes into a word, a byte each, with bit 5 set (c|0x20): the
// key of a name in any case is the key of its lower case. Two names have one key only if they
// are one name in two cases or hold non-letters (c|0x20 is a given lower-case letter only for
// that letter and its upper case), and every command's name is letters. No byte of a key is 0,
// so names of different lengths have different keys. It returns 0 for an empty or a longer
// name.
func nameKey(name []byte) uint64 {
	var k uint64
	switch n := len(name); {
	case n >= 4 && n <= 8: // two loads of 4 bytes, which overlap unless n is 8
		k = uint64(binary.LittleEndian.Uint32(name)) | uint64(binary.LittleEndian.Uint32(name[n-4:]))<<(8*(n-4))
	case n >= 1 && n <= 3: // bytes 0, n/2 and n-1: all of them
		k = uint64(name[0]) | uint64(name[n/2])<<(8*(n/2)) | uint64(name[n-1])<<(8*(n-1))
	default:
		return 0
	}
	return k | 0x2020202020202020>>((64-8*len(name))&63)
}

// lookup returns the index of the command named name, in any case, in commands; -1 for none.
// A switch over its key (nameKey), a binary search over constants, costs a fraction of
// lowering the name and comparing strings. The constants are the commands' names packed as
// nameKey packs them (TestRESPCommandKeys): a name's letters, each with bit 5 set already.
func lookup(name []byte) int {
	switch nameKey(name) {
	case 'p' | 'i'<<8 | 'n'<<16 | 'g'<<24:
		return 0
	case 'e' | 'c'<<8 | 'h'<<16 | 'o'<<24:
		return 1
	case 's' | 'e'<<8 | 't'<<16:
		return 2
	case 'g' | 'e'<<8 | 't'<<16:
		return 3
	case 'i' | 'n'<<8 | 'c'<<16 | 'r'<<24:
		return 4
	case 'd' | 'e'<<8 | 'l'<<16:
		return 5
	case 'm' | 's'<<8 | 'e'<<16 | 't'<<24:
		return 6
	case 'l' | 'p'<<8 | 'u'<<16 | 's'<<24 | 'h'<<32:
		return 7
	case 'r' | 'p'<<8 | 'u'<<16 | 's'<<24 | 'h'<<32:
		return 8
	case 'l' | 'p'<<8 | 'o'<<16 | 'p'<<24:
		return 9
	case 'r' | 'p'<<8 | 'o'<<16 | 'p'<<24:
		return 10
	case 'l' | 'r'<<8 | 'a'<<16 | 'n'<<24 | 'g'<<32 | 'e'<<40:
		return 11
	case 's' | 'a'<<8 | 'd'<<16 | 'd'<<24:
		return 12
	case 's' | 'p'<<8 | 'o'<<16 | 'p'<<24:
		return 13
	case 'h' | 's'<<8 | 'e'<<16 | 't'<<24:
		return 14
	case 'z' | 'a'<<8 | 'd'<<16 | 'd'<<24:
		return 15
	case 'z' | 'p'<<8 | 'o'<<16 | 'p'<<24 | 'm'<<32 | 'i'<<40 | 'n'<<48:
		return 16
	case 'd' | 'b'<<8 | 's'<<16 | 'i'<<24 | 'z'<<32 | 'e'<<40:
		return 17
	case 'f' | 'l'<<8 | 'u'<<16 | 's'<<24 | 'h'<<32 | 'a'<<40 | 'l'<<48 | 'l'<<56:
		return 18
	case 'c' | 'o'<<8 | 'n'<<16 | 'f'<<24 | 'i'<<32 | 'g'<<40:
		return 19
	case 'q' | 'u'<<8 | 'i'<<16 | 't'<<24:
		return 20
	}
	return -1
}

// run runs one command; quit is true for QUIT (its +OK is in out).
func (r *RESP) run(args [][]byte, out []byte) (_ []byte, quit bool) {
	i := lookup(args[0])
	if i < 0 {
		return appendError(out, unknownCommand(args)), false
	}
	cmd := &commands[i]
	if cmd.arity > 0 && len(args) != cmd.arity || cmd.arity < 0 && len(args) < -cmd.arity {
		return appendError(out, "ERR wrong number of arguments for '"+cmd.name+"' command"), false
	}
	return cmd.run(r.ks, args, out), i == cmdQuitIndex
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
