//go:build linux

package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// next parses the command at the start of in as RESP.serve does: the fast paths, then
// nextSlow (whose results it returns).
func (p *respParser) next(in []byte) (args [][]byte, n int, err error) {
	if len(in) == 0 {
		return nil, 0, nil
	}
	var ok bool
	if in[0] == '*' {
		args, n, ok = p.multibulkFast(in)
	} else {
		args, n, ok = p.inlineFast(in)
	}
	if ok {
		return args, n, nil
	}
	return p.nextSlow(in)
}

// The requests redis-benchmark 7.0 sends (redisFormatCommand of its default tests), as seeds and
// as the parser's real-world input.
var benchmarkRequests = []string{
	"PING\r\n", // PING_INLINE
	"*1\r\n$4\r\nPING\r\n",
	"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n",
	"*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n",
	"*2\r\n$4\r\nINCR\r\n$20\r\ncounter:__rand_int__\r\n",
	"*3\r\n$5\r\nLPUSH\r\n$6\r\nmylist\r\n$3\r\nxxx\r\n",
	"*3\r\n$5\r\nRPUSH\r\n$6\r\nmylist\r\n$3\r\nxxx\r\n",
	"*2\r\n$4\r\nLPOP\r\n$6\r\nmylist\r\n",
	"*2\r\n$4\r\nRPOP\r\n$6\r\nmylist\r\n",
	"*3\r\n$4\r\nSADD\r\n$5\r\nmyset\r\n$20\r\nelement:__rand_int__\r\n",
	"*4\r\n$4\r\nHSET\r\n$6\r\nmyhash\r\n$20\r\nelement:__rand_int__\r\n$3\r\nxxx\r\n",
	"*2\r\n$4\r\nSPOP\r\n$5\r\nmyset\r\n",
	"*4\r\n$4\r\nZADD\r\n$6\r\nmyzset\r\n$1\r\n0\r\n$20\r\nelement:__rand_int__\r\n",
	"*2\r\n$7\r\nZPOPMIN\r\n$6\r\nmyzset\r\n",
	"*4\r\n$6\r\nLRANGE\r\n$6\r\nmylist\r\n$1\r\n0\r\n$2\r\n99\r\n",
	"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n",
	"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nappendonly\r\n",
}

// outputLimit is the limit the parsers' unit tests give serve: the default write limit.
const outputLimit = DefaultWriteLimit

// serveAll runs in through a fresh RESP in one call and returns the replies and closeAfter.
func serveAll(t *testing.T, in string) (string, bool) {
	t.Helper()
	r := NewRESP(NewKeyspace())
	n, out, closeAfter := r.serve([]byte(in), nil, outputLimit)
	if !closeAfter && n != len(in) {
		t.Fatalf("serve(%q) consumed %d of %d bytes", in, n, len(in))
	}
	return string(out), closeAfter
}

// TestRESPParsesBenchmarkRequests: each of redis-benchmark's requests is one command, consumed
// whole, with its arguments.
func TestRESPParsesBenchmarkRequests(t *testing.T) {
	var p respParser
	for _, req := range benchmarkRequests {
		args, n, err := p.next([]byte(req))
		if err != nil || n != len(req) || len(args) == 0 {
			t.Errorf("next(%q) = %q, %d, %v", req, args, n, err)
		}
	}
	args, _, _ := p.next([]byte(benchmarkRequests[2]))
	if fmt.Sprintf("%q", args) != `["SET" "key:__rand_int__" "xxx"]` {
		t.Errorf("SET parsed as %q", args)
	}
}

// respFastPathCases are inputs at the edges of the parser's fast paths (multibulkFast,
// inlineFast): counts at their digit limit and past it, leading zeros, signs, limits, a bulk
// shorter or longer than its count, quotes, NUL bytes, empty lines.
var respFastPathCases = []string{
	"*0\r\n", "*00\r\n", "*01\r\n$1\r\na\r\n", "*-1\r\n", "*+1\r\n", "*1 \r\n$1\r\na\r\n",
	"*1\r\n$0\r\n\r\n", "*1\r\n$00\r\n\r\n", "*1\r\n$-0\r\n\r\n", "*1\r\n$1\r\nab\r\n",
	"*1\r\n$3\r\nab\r\n", "*1\r\n$1234567\r\n", "*1\r\n$12345678\r\n", "*1\r\n$\r\n",
	"*1234567\r\n", "*12345678\r\n", "*65536\r\n", "*65537\r\n", "*\r\n", "*1\r\n:1\r\n",
	"*1\r\n$1048576\r\n", "*1\r\n$1048577\r\n", "*2\r\n$3\r\nGET\r\n$1\r\nk\rx",
	"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", "*1\n$4\r\nPING\r\n", "*1\r",
	"PING\r\n", "PING\n", "PING", " PING  x\t\v\f y\r\r\n", "\r\n", "\n", "a\x00b\n", "a\rb\n",
	"ECHO \"a b\"\r\n", "ECHO 'a'\r\n", "ECHO a\"b\r\n", "\xff\xfe x\n", "PING\r\nPING\r\n",
}

// TestRESPFastPathsAgreeWithTheGeneralParser: on every prefix of inputs at the edges of the fast
// paths, the parser (next) finds what its general rules (nextSlow) find: the same arguments,
// length and error.
func TestRESPFastPathsAgreeWithTheGeneralParser(t *testing.T) {
	for _, in := range append(respFastPathCases, benchmarkRequests...) {
		for i := 1; i <= len(in); i++ {
			if fast, slow := respNext(in[:i], false), respNext(in[:i], true); fast != slow {
				t.Errorf("%q: the parser found %s, its general rules %s", in[:i], fast, slow)
			}
		}
	}
}

// respNext is what a respParser's next (or, slow, nextSlow) finds at the start of in, as text.
func respNext(in string, slow bool) string {
	var p respParser
	next := p.next
	if slow {
		next = p.nextSlow
	}
	args, n, err := next([]byte(in))
	return fmt.Sprintf("%q %d %v", args, n, err)
}

// TestRESPCommandKeys: each command is found by its name in any case (lookup), and a name that
// differs from every command's by a byte, or is longer, is not.
func TestRESPCommandKeys(t *testing.T) {
	for i, c := range commands {
		mixed := []byte(c.name)
		mixed[0] -= 'a' - 'A'
		for _, name := range []string{c.name, strings.ToUpper(c.name), string(mixed)} {
			if got := lookup([]byte(name)); got != i {
				t.Errorf("lookup(%q) = %d; want %d", name, got, i)
			}
		}
		others := []string{c.name + "x", c.name[1:], c.name + "\x00", "x" + c.name}
		for j := range c.name { // one byte changed: to a non-letter, to the letter after it
			others = append(others, c.name[:j]+"^"+c.name[j+1:], c.name[:j]+string(c.name[j]+1)+c.name[j+1:])
		}
		for _, name := range others {
			if got := lookup([]byte(name)); got >= 0 && commands[got].name != strings.ToLower(name) {
				t.Errorf("lookup(%q) = %d (%s)", name, got, commands[got].name)
			}
		}
	}
}

// TestRESPWaitsForIncompleteCommands: every proper prefix of a request is "not yet" (n == 0, no
// error), never a protocol error.
func TestRESPWaitsForIncompleteCommands(t *testing.T) {
	var p respParser
	for _, req := range append(benchmarkRequests, "SET a \"b c\"\r\n") {
		for i := range len(req) - 1 { // the last byte of a multibulk's "\r\n" is not waited for
			if _, n, err := p.next([]byte(req[:i])); n != 0 || err != nil {
				t.Errorf("next(%q) = n %d, err %v; want 0, nil", req[:i], n, err)
			}
		}
	}
}

// TestRESPInlineQuoting: inline commands split like Redis's sdssplitargs.
func TestRESPInlineQuoting(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SET k v\r\n", `["SET" "k" "v"]`},
		{"  a   b\t c \n", `["a" "b" "c"]`},
		{`a "b c" 'd e'` + "\r\n", `["a" "b c" "d e"]`},
		{`"\x41\n\"q" 'it\'s'` + "\n", `["A\n\"q" "it's"]`},
		{`x"y z"` + "\n", `["xy z"]`}, // a quote inside a word starts quoting
		{"a\x00b c\n", `["a"]`},       // NUL ends the line, as in Redis's C string
		{"\r\n", `[]`},
	} {
		var p respParser
		args, n, err := p.next([]byte(tc.in))
		if got := fmt.Sprintf("%q", args); err != nil || n != len(tc.in) || got != tc.want {
			t.Errorf("next(%q) = %s, %d, %v; want %s", tc.in, got, n, err, tc.want)
		}
	}
}

// respProtocolErrorCases are bad framings and Redis 7.0's replies to them (from redis-server
// 7.0.15), after which the connection is closed. The cases marked limit hit this package's lower
// limits (MaxRESPBulk, MaxRESPArgs), which Redis does not have: it would wait for more input.
var respProtocolErrorCases = []struct {
	in, want string
	limit    bool
}{
	{"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n", false},
	{"*2147483648\r\n", "-ERR Protocol error: invalid multibulk length\r\n", false},
	{"*01\r\n", "-ERR Protocol error: invalid multibulk length\r\n", false},
	{"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n", false},
	{"*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n", false},
	{"*1\r\n$600000000\r\n", "-ERR Protocol error: invalid bulk length\r\n", false},
	{"*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n", false},
	{"*1\r\n\r\n", "-ERR Protocol error: expected '$', got ' '\r\n", false},
	{"PING\r\nECHO \"ab\r\n", "+PONG\r\n-ERR Protocol error: unbalanced quotes in request\r\n", false},
	{"ECHO \"a\"b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n", false},
	{strings.Repeat("x", MaxRESPLine+1), "-ERR Protocol error: too big inline request\r\n", false},
	{"*" + strings.Repeat("1", MaxRESPLine+1), "-ERR Protocol error: too big mbulk count string\r\n", false},
	{"*1\r\n$" + strings.Repeat("1", MaxRESPLine+1), "-ERR Protocol error: too big bulk count string\r\n", false},
	{fmt.Sprintf("*1\r\n$%d\r\n", MaxRESPBulk+1), "-ERR Protocol error: invalid bulk length\r\n", true},
	{fmt.Sprintf("*%d\r\n", MaxRESPArgs+1), "-ERR Protocol error: invalid multibulk length\r\n", true},
}

// TestRESPProtocolErrorsCloseWithRedisText: bad framing gets Redis's reply after the replies of
// the commands before it, and closeAfter.
func TestRESPProtocolErrorsCloseWithRedisText(t *testing.T) {
	for _, tc := range respProtocolErrorCases {
		got, closeAfter := serveAll(t, tc.in)
		if got != tc.want || !closeAfter {
			t.Errorf("%.40q: got %q, close %v; want %q, close", tc.in, got, closeAfter, tc.want)
		}
	}
}

// TestRESPRequestOverLimitClosesSilently: a command that would be larger than MaxRESPRequest is
// not waited for: the connection is closed without a reply (Redis's query buffer limit).
func TestRESPRequestOverLimitClosesSilently(t *testing.T) {
	var in bytes.Buffer
	in.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n")
	fmt.Fprintf(&in, "$%d\r\n", MaxRESPBulk) // legal, but the command is not complete...
	in.Write(bytes.Repeat([]byte("v"), MaxRESPBulk-10))
	r := NewRESP(NewKeyspace())
	if n, out, closeAfter := r.serve(in.Bytes(), nil, outputLimit); n != 0 || closeAfter || len(out) != 0 {
		t.Fatalf("a legal incomplete command: n %d, close %v, out %q", n, closeAfter, out)
	}
	bulk := fmt.Sprintf("$%d\r\n%s\r\n", MaxRESPBulk, strings.Repeat("v", MaxRESPBulk))
	big := "*3\r\n" + bulk + bulk + "$1\r\n" // ...this one, still incomplete, is too big
	if _, out, closeAfter := r.serve([]byte(big), nil, outputLimit); !closeAfter || len(out) != 0 {
		t.Errorf("over MaxRESPRequest: close %v, out %q; want a silent close", closeAfter, out)
	}
}

// respReplyCases are command sequences and redis-server 7.0.15's replies to them, byte for
// byte (TestRESPMatchesRedisServer checks them against the redis-server installed, if any).
var respReplyCases = []struct{ in, want string }{
	{"PING\r\nPING hi\r\nPING a b\r\nECHO x\r\nECHO\r\n",
		"+PONG\r\n$2\r\nhi\r\n-ERR wrong number of arguments for 'ping' command\r\n$1\r\nx\r\n-ERR wrong number of arguments for 'echo' command\r\n"},
	{"foo a b\r\nfoo\r\n*1\r\n$0\r\n\r\nGET\r\n",
		"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n-ERR unknown command 'foo', with args beginning with: \r\n" +
			"-ERR unknown command '', with args beginning with: \r\n-ERR wrong number of arguments for 'get' command\r\n"},
	{"*3\r\n$3\r\nfoo\r\n$200\r\n" + strings.Repeat("x", 200) + "\r\n$3\r\nabc\r\n",
		"-ERR unknown command 'foo', with args beginning with: '" + strings.Repeat("x", 128) + "' \r\n"},
	{"CONFIG GET save\r\nCONFIG GET appendonly\r\nCONFIG GET nosuch\r\nCONFIG GET\r\nCONFIG foo\r\nCONFIG\r\n",
		"*2\r\n$4\r\nsave\r\n$0\r\n\r\n*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n*0\r\n-ERR wrong number of arguments for 'config|get' command\r\n" +
			"-ERR unknown subcommand 'foo'. Try CONFIG HELP.\r\n-ERR wrong number of arguments for 'config' command\r\n"},
	{"SET a b c\r\nSET a b\r\nGET a\r\nGET nokey\r\nINCR a\r\nSET n 9223372036854775807\r\nINCR n\r\nLPUSH a x\r\nINCR c\r\nINCR c\r\n",
		"-ERR syntax error\r\n+OK\r\n$1\r\nb\r\n$-1\r\n-ERR value is not an integer or out of range\r\n+OK\r\n" +
			"-ERR increment or decrement would overflow\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:1\r\n:2\r\n"},
	{"RPUSH l a b c\r\nLRANGE l 0 -1\r\nLRANGE l -2 10\r\nLRANGE l 5 1\r\nLRANGE l x 1\r\nLRANGE nol 0 1\r\nLPOP l 2\r\nLPOP l 0\r\nRPOP l\r\nRPOP l\r\nLPOP nol 2\r\nLPOP nol\r\nLPOP l -1\r\n",
		":3\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n*0\r\n-ERR value is not an integer or out of range\r\n*0\r\n" +
			"*2\r\n$1\r\na\r\n$1\r\nb\r\n*0\r\n$1\r\nc\r\n$-1\r\n*-1\r\n$-1\r\n-ERR value is out of range, must be positive\r\n"},
	{"LPUSH l a b\r\nLRANGE l 0 -1\r\nLPOP l 1 2\r\n",
		":2\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n-ERR wrong number of arguments for 'lpop' command\r\n"},
	{"SADD s a a\r\nSPOP s\r\nSPOP nos\r\nSPOP s 5\r\nSPOP nos 2\r\nSPOP s 1 2\r\nSPOP s x\r\n",
		":1\r\n$1\r\na\r\n$-1\r\n*0\r\n*0\r\n-ERR syntax error\r\n-ERR value is out of range, must be positive\r\n"},
	{"HSET h a 1 b\r\nHSET h a 1 b 2\r\nHSET h a 3\r\n",
		"-ERR wrong number of arguments for 'hset' command\r\n:2\r\n:0\r\n"},
	{"ZADD z 0 b 0 a 1.5 c\r\nZPOPMIN z\r\nZPOPMIN z 5\r\nZPOPMIN z\r\nZADD z x a\r\nZADD z 1\r\nZADD z 0.1 q\r\nZPOPMIN z\r\nZADD z nan s\r\nZPOPMIN z 1 2\r\nZPOPMIN z -1\r\n",
		":3\r\n*2\r\n$1\r\na\r\n$1\r\n0\r\n*4\r\n$1\r\nb\r\n$1\r\n0\r\n$1\r\nc\r\n$3\r\n1.5\r\n*0\r\n-ERR value is not a valid float\r\n" +
			"-ERR wrong number of arguments for 'zadd' command\r\n:1\r\n*2\r\n$1\r\nq\r\n$19\r\n0.10000000000000001\r\n-ERR value is not a valid float\r\n" +
			"-ERR syntax error\r\n-ERR value is out of range, must be positive\r\n"},
	{"ZADD z 1.5 a 1e20 b 123456789012345678 c -2.5e-7 d\r\nZPOPMIN z 10\r\n",
		":4\r\n*8\r\n$1\r\nd\r\n$23\r\n-2.4999999999999999e-07\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nc\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\nb\r\n$5\r\n1e+20\r\n"},
	{"MSET a\r\nMSET a 1 b 2\r\nGET b\r\nDEL a b c\r\nDBSIZE\r\n",
		"-ERR wrong number of arguments for 'mset' command\r\n+OK\r\n$1\r\n2\r\n:2\r\n:0\r\n"},
	{"*-1\r\nPING\r\n*0\r\nPING\r\n\r\n\r\nPING\r\n", "+PONG\r\n+PONG\r\n+PONG\r\n"},
	{"*2\r\n$4\r\nPING\r\n$1\r\nabcd\r\nPING\r\n", // the 2 bytes after a bulk are skipped unread
		"$1\r\na\r\n-ERR unknown command 'd', with args beginning with: \r\n+PONG\r\n"},
}

// TestRESPCommandReplies: each command's replies are Redis's (respReplyCases).
func TestRESPCommandReplies(t *testing.T) {
	for _, tc := range respReplyCases {
		got, closeAfter := serveAll(t, tc.in)
		if got != tc.want || closeAfter {
			t.Errorf("%q:\n got %q (close %v)\nwant %q", tc.in, got, closeAfter, tc.want)
		}
	}
}

// TestRESPQuitRepliesThenCloses: QUIT answers +OK and the rest of the input is dropped.
func TestRESPQuitRepliesThenCloses(t *testing.T) {
	got, closeAfter := serveAll(t, "PING\r\nQUIT\r\nPING\r\n")
	if got != "+PONG\r\n+OK\r\n" || !closeAfter {
		t.Errorf("got %q, close %v", got, closeAfter)
	}
}

// TestRESPStopsAtOutputLimit: serve stops once the output reaches its limit and leaves the
// other commands for the next call; every command is answered once over the calls.
func TestRESPStopsAtOutputLimit(t *testing.T) {
	r := NewRESP(NewKeyspace())
	in := []byte(strings.Repeat("PING\r\n", outputLimit)) // 7 bytes of reply each: more than the limit
	replies := 0
	for len(in) > 0 {
		n, out, closeAfter := r.serve(in, nil, outputLimit)
		if closeAfter || n == 0 || len(out) >= outputLimit+len("+PONG\r\n") {
			t.Fatalf("n %d, out %d bytes, close %v", n, len(out), closeAfter)
		}
		replies += bytes.Count(out, []byte("+PONG\r\n"))
		in = in[n:]
	}
	if replies != outputLimit {
		t.Errorf("%d replies to %d PINGs", replies, outputLimit)
	}
}

// TestRESPLargeList: the list's ring buffer keeps its order through growth and pops at both ends.
func TestRESPLargeList(t *testing.T) {
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "RPUSH l %d\r\nLPUSH l -%d\r\n", i, i)
	}
	in.WriteString("LPOP l\r\nRPOP l\r\nLRANGE l 0 2\r\nLRANGE l -2 -1\r\n")
	got, _ := serveAll(t, in.String())
	want := "$3\r\n-99\r\n$2\r\n99\r\n*3\r\n$3\r\n-98\r\n$3\r\n-97\r\n$3\r\n-96\r\n*2\r\n$2\r\n97\r\n$2\r\n98\r\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("got ...%q, want suffix %q", got[max(0, len(got)-len(want)):], want)
	}
}

// respServers runs test for every usable backend and driver, with the address of a server of
// the Handler newHandler returns.
func respServers(t *testing.T, newHandler func() Handler, test func(t *testing.T, addr string)) {
	for _, b := range ringev.Backends() {
		for _, d := range drivers {
			d.Backend = b
			t.Run(b+"/"+d.API+d.Recv, func(t *testing.T) {
				d.Handler = newHandler()
				srv, err := listenServer(t, d)
				if err != nil {
					testutil.SkipIfIOUringUnavailable(t, err, "backend "+b)
					t.Fatal(err)
				}
				defer stopServer(t, srv)
				test(t, srv.Addr().String())
			})
		}
	}
}

// workCountingRESP is a RESP that counts the work it does for every connection but one (the
// client whose address is good): its OnData calls and the bytes they consume and queue. At
// each OnData of the good client's connection it records the counts so far (at).
type workCountingRESP struct {
	*RESP
	good    atomic.Pointer[string] // the good client's address, as its RemoteAddr gives it
	isGood  map[*Conn]bool         // (the loop's goroutine only) each connection's class
	calls   atomic.Int64           // OnData calls for the others
	bytes   atomic.Int64           // input bytes those calls consumed, and output they queued
	atCalls atomic.Int64           // calls when the good client was last served
	atBytes atomic.Int64           // bytes when the good client was last served
}

func (r *workCountingRESP) OnData(c *Conn) {
	good, known := r.isGood[c]
	if !known {
		if a := r.good.Load(); a != nil {
			good = c.RemoteAddr().String() == *a
			r.isGood[c] = good
		}
	}
	if good {
		r.atCalls.Store(r.calls.Load())
		r.atBytes.Store(r.bytes.Load())
		r.RESP.OnData(c)
		return
	}
	in, out := c.Buffered(), c.Pending()
	r.RESP.OnData(c)
	r.calls.Add(1)
	r.bytes.Add(int64(max(0, in-c.Buffered()) + max(0, c.Pending()-out)))
}

// hostileCallsWhileWaiting bounds the OnData calls the hostile clients of
// TestRESPAnswersAClientPromptlyBesideHostileOnes get while a PING of the good client waits: a
// few loop turns' worth. A turn serves each hostile connection's input once (a read), or its
// receives' completions (the flood's 1.2 MB is about 19 of 64 KiB), and its output up to the
// write limit. A loop that serves a connection until it has nothing more to read gives the
// flood some 38 calls while a PING waits.
const hostileCallsWhileWaiting = 32

// TestRESPAnswersAClientPromptlyBesideHostileOnes, on every backend and driver: beside a
// slowloris client (an inline command, one byte per 5 ms, never ending), a client that
// pipelines 200,000 PINGs without reading a reply, and one that sends a bulk length of 1 GB
// and then trickles, a fourth client's PINGs are each served before the hostile ones get more
// than a few loop turns' worth of work (hostileCallsWhileWaiting OnData calls): counted, not
// timed, so that a slow machine does not fail it and starvation does. The process's heap
// stays below 64 MiB more than at the start.
func TestRESPAnswersAClientPromptlyBesideHostileOnes(t *testing.T) {
	var r *workCountingRESP
	newHandler := func() Handler {
		r = &workCountingRESP{RESP: NewRESP(NewKeyspace()), isGood: map[*Conn]bool{}}
		return r
	}
	respServers(t, newHandler, func(t *testing.T, addr string) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap0 := ms.HeapInuse
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer func() { close(stop); wg.Wait() }()
		dial := func() net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		slow := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				slow.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := slow.Write([]byte("a")); err != nil {
					return
				}
			}
		}()
		flood := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := []byte(strings.Repeat("PING\r\n", 1000))
			for range 200 {
				select {
				case <-stop:
					return
				default:
				}
				flood.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := flood.Write(msg); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						continue // the server stopped reading: it is holding back, as it should
					}
					return
				}
			}
		}()
		big := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			big.Write([]byte("*2\r\n$3\r\nSET\r\n$1000000000\r\n"))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				big.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := big.Write(make([]byte, 4096)); err != nil {
					return
				}
			}
		}()
		good := dial()
		me := good.LocalAddr().String()
		r.good.Store(&me)
		rd := bufio.NewReader(good)
		var maxCalls, maxBytes int64
		for i := range 50 {
			calls := r.calls.Load() // each PING after the hostile ones were served once more
			eventually(t, "the hostile clients served", func() bool { return r.calls.Load() > calls })
			good.SetDeadline(time.Now().Add(waitFor))
			if _, err := good.Write([]byte("PING\r\n")); err != nil {
				t.Fatalf("the well-behaved client: write: %v", err)
			}
			calls, work := r.calls.Load(), r.bytes.Load() // its PING is in the server's socket
			if line, err := rd.ReadString('\n'); err != nil || line != "+PONG\r\n" {
				t.Fatalf("the well-behaved client's PING %d: %q, %v; want +PONG", i, line, err)
			}
			dc, db := r.atCalls.Load()-calls, r.atBytes.Load()-work
			if dc > hostileCallsWhileWaiting {
				t.Fatalf("while the well-behaved client's PING %d waited, the hostile ones got %d OnData calls (%d bytes of work); want at most %d calls",
					i, dc, db, hostileCallsWhileWaiting)
			}
			maxCalls, maxBytes = max(maxCalls, dc), max(maxBytes, db)
		}
		t.Logf("while a PING waited, the hostile clients got at most %d OnData calls and %d bytes of work", maxCalls, maxBytes)
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > heap0+64<<20 {
			t.Errorf("heap in use grew from %d to %d bytes under hostile clients", heap0, ms.HeapInuse)
		}
	})
}
