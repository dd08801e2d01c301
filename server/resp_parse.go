//go:build unix

package server

import (
	"bytes"
	"errors"
)

// Limits of the RESP parser. Redis's own are larger (a 512 MB bulk, a 1 GB query buffer); these
// keep a connection's memory small whatever a client sends.
const (
	// MaxRESPLine is the longest inline command or count line ("*3", "$5"), in bytes, that is
	// waited for without its line ending: 64 KiB, Redis's PROTO_INLINE_MAX_SIZE. Longer gives
	// "ERR Protocol error: too big inline request" (or "too big mbulk count string", "too big
	// bulk count string") and the connection is closed.
	MaxRESPLine = 64 << 10
	// MaxRESPBulk is the largest bulk string, in bytes: 1 MiB (Redis: proto-max-bulk-len, 512 MB).
	// Larger gives "ERR Protocol error: invalid bulk length", Redis's reply, and a close.
	MaxRESPBulk = 1 << 20
	// MaxRESPArgs is the most arguments one command may have: 65,536 (Redis: 1,048,576 before
	// AUTH, INT_MAX after). More gives "ERR Protocol error: invalid multibulk length" and a close.
	MaxRESPArgs = 1 << 16
	// MaxRESPRequest is the largest command, in bytes with its framing, that is waited for: 2 MiB.
	// A connection whose unparsed input grows past it is closed without a reply, as Redis closes
	// a client past client-query-buffer-limit.
	MaxRESPRequest = 2 << 20
)

// protocolError is a RESP framing error: its text follows "ERR Protocol error: " in the reply,
// and the connection is closed after it.
type protocolError string

func (e protocolError) Error() string { return "Protocol error: " + string(e) }

// errRequestTooBig: no complete command within MaxRESPRequest bytes; closed without a reply.
var errRequestTooBig = errors.New("RESP request larger than MaxRESPRequest")

// respParser splits a connection's input into commands. Its buffers are reused from one command
// to the next: a command's arguments are valid until the parser's next call.
type respParser struct {
	args    [][]byte
	scratch []byte // inline arguments, unquoted
	starts  []int  // inline: each word's start and end in scratch
}

// nextSlow parses the command at the start of in by the parser's general rules, which the fast
// paths (multibulkFast, inlineFast; RESP.serve tries them first) follow for the commands
// they take. It returns its arguments (none for an empty command: an empty inline line or a
// multibulk count <= 0, both ignored as Redis does), the bytes consumed, or n == 0 when in holds
// no complete command yet. A multibulk argument is a view into in, and so is an inline one
// without quotes; a quoted inline one lives in the parser's scratch buffer. The error is a
// protocolError or errRequestTooBig.
func (p *respParser) nextSlow(in []byte) (args [][]byte, n int, err error) {
	if len(in) == 0 {
		return nil, 0, nil
	}
	if in[0] == '*' {
		args, n, err = p.multibulk(in)
	} else {
		args, n, err = p.inline(in)
	}
	if n == 0 && err == nil && len(in) > MaxRESPRequest {
		err = errRequestTooBig
	}
	return args, n, err
}

// multibulkFast parses the usual multibulk command in one pass: counts of at most 7 digits
// (no sign, no leading zero) within the limits, each bulk complete and after a '$'. It returns
// what multibulk would; ok is false for anything else (an incomplete command, an error, a
// count it does not take), which multibulk then parses from the start.
func (p *respParser) multibulkFast(in []byte) (args [][]byte, n int, ok bool) {
	count, pos := shortCount(in, 1)
	if count < 0 {
		if count, pos, ok = smallCount(in, 1); !ok || count > MaxRESPArgs {
			return nil, 0, false
		}
	}
	args = p.args[:0]
	for range count {
		if pos >= len(in) || in[pos] != '$' {
			p.args = args
			return nil, 0, false
		}
		size, next := shortCount(in, pos+1)
		if size < 0 {
			if size, next, ok = smallCount(in, pos+1); !ok || size > MaxRESPBulk {
				p.args = args
				return nil, 0, false
			}
		}
		if len(in)-next < size+2 {
			p.args = args
			return nil, 0, false
		}
		args = append(args, in[next:next+size])
		pos = next + size + 2
	}
	p.args = args
	return args, pos, true
}

// shortCount is smallCount's common cases, inlined: a count of one or two digits at in[i] (no
// leading zero but in "0") whose '\r' has a byte after it, and the offset past its line's end;
// v is -1 for any other (smallCount decides then).
func shortCount(in []byte, i int) (v, next int) {
	if i+3 < len(in) {
		d, e := in[i]-'0', in[i+1]
		switch {
		case e == '\r' && d <= 9:
			return int(d), i + 3
		case in[i+2] == '\r' && d-1 <= 8 && e-'0' <= 9:
			return int(d)*10 + int(e-'0'), i + 4
		}
	}
	return -1, 0
}

// smallCount parses the count that starts at in[i] and ends at a '\r' with a byte after it (the
// line's end, as line reads it): 1 to 7 digits, no leading zero but in "0". It returns the
// count and the offset past the line's end; ok is false for anything else (parseInt and line
// decide then).
func smallCount(in []byte, i int) (v, next int, ok bool) {
	if i >= len(in) {
		return 0, 0, false
	}
	v = int(in[i]) - '0'
	if uint(v) > 9 {
		return 0, 0, false
	}
	j := i + 1
	for ; j < len(in) && j-i <= 7; j++ {
		c := in[j]
		if c == '\r' {
			if j+1 >= len(in) {
				return 0, 0, false
			}
			return v, j + 2, true
		}
		d := int(c) - '0'
		if uint(d) > 9 || v == 0 {
			return 0, 0, false
		}
		v = v*10 + d
	}
	return 0, 0, false
}

// inlineClass sorts the bytes of an inline line for inlineFast: 0 a word's, 1 a space (isSpace
// but '\n'), 2 the line's end ('\n'), 3 one only inline's rules read right (a quote, NUL).
var inlineClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c == '\n':
			t[c] = 2
		case isSpace(byte(c)):
			t[c] = 1
		case c == '"' || c == '\'' || c == 0:
			t[c] = 3
		}
	}
	return t
}()

// inlineFast parses an inline command without quotes or NUL bytes in one pass, its words views
// of in. It returns what inline would; ok is false for anything else (no line end yet, a quote,
// a NUL), which inline then parses from the start.
func (p *respParser) inlineFast(in []byte) (args [][]byte, n int, ok bool) {
	p.args = p.args[:0]
	start := -1
	for i, c := range in {
		switch inlineClass[c] {
		case 0:
			if start < 0 {
				start = i
			}
		case 1:
			if start >= 0 {
				p.args = append(p.args, in[start:i])
				start = -1
			}
		case 2:
			if start >= 0 {
				p.args = append(p.args, in[start:i])
			}
			return p.args, i + 1, true
		default:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// line returns the count line at the start of in, ending at the first '\r' (as Redis reads it:
// the byte after '\r' is taken to be '\n' without a look), and the offset past its ending; ok is
// false while the ending has not arrived. tooBig is the error for a line over MaxRESPLine.
func line(in []byte, tooBig protocolError) (text []byte, next int, ok bool, err error) {
	i := bytes.IndexByte(in, '\r')
	if i < 0 || i+1 >= len(in) {
		if len(in) > MaxRESPLine {
			return nil, 0, false, tooBig
		}
		return nil, 0, false, nil
	}
	return in[:i], i + 2, true, nil
}

// multibulk parses "*N\r\n" followed by N bulk strings "$len\r\n<len bytes>\r\n".
func (p *respParser) multibulk(in []byte) ([][]byte, int, error) {
	text, pos, ok, err := line(in, "too big mbulk count string")
	if !ok {
		return nil, 0, err
	}
	count, ok := parseInt(text[1:])
	if !ok || count > MaxRESPArgs {
		return nil, 0, protocolError("invalid multibulk length")
	}
	p.args = p.args[:0]
	for range count { // count <= 0: an empty command, skipped
		text, next, ok, err := line(in[pos:], "too big bulk count string")
		if !ok {
			return nil, 0, err
		}
		if c := in[pos]; c != '$' { // in[pos] is the '\r' of an empty line
			return nil, 0, protocolError("expected '$', got '" + string([]byte{c}) + "'")
		}
		size, ok := parseInt(text[1:])
		if !ok || size < 0 || size > MaxRESPBulk {
			return nil, 0, protocolError("invalid bulk length")
		}
		pos += next
		if int64(len(in)-pos) < size+2 {
			return nil, 0, nil
		}
		p.args = append(p.args, in[pos:pos+int(size)])
		pos += int(size) + 2 // the two bytes after the bulk are not looked at (Redis does the same)
	}
	return p.args, pos, nil
}

// inline parses a command written as one line of words ("SET k v\r\n"), the way redis-cli's
// users and telnet send it: words split at spaces, "double quotes" with C escapes (\n, \xHH, ...)
// and 'single quotes' (only \' escaped), Redis's sdssplitargs rules. The line ends at '\n', with
// a '\r' before it dropped; a NUL byte ends it too, as in Redis's C string.
func (p *respParser) inline(in []byte) ([][]byte, int, error) {
	nl := bytes.IndexByte(in, '\n')
	if nl < 0 {
		if len(in) > MaxRESPLine {
			return nil, 0, protocolError("too big inline request")
		}
		return nil, 0, nil
	}
	text := in[:nl]
	if len(text) > 0 && text[len(text)-1] == '\r' {
		text = text[:len(text)-1]
	}
	if i := bytes.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	if args, ok := p.plainWords(text); ok {
		return args, nl + 1, nil
	}
	args, err := p.quotedWords(text)
	if err != nil {
		return nil, 0, err
	}
	return args, nl + 1, nil
}

// quotedWords splits an inline line into its words by sdssplitargs's rules (splitWord), into the
// parser's scratch buffer.
func (p *respParser) quotedWords(text []byte) ([][]byte, error) {
	// The words go to scratch first and become args once scratch has stopped moving.
	p.args, p.scratch, p.starts = p.args[:0], p.scratch[:0], p.starts[:0]
	for i := 0; ; {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		if i == len(text) {
			break
		}
		p.starts = append(p.starts, len(p.scratch))
		var ok bool
		p.scratch, i, ok = splitWord(text, i, p.scratch)
		if !ok {
			return nil, protocolError("unbalanced quotes in request")
		}
		p.starts = append(p.starts, len(p.scratch))
	}
	for j := 0; j < len(p.starts); j += 2 {
		p.args = append(p.args, p.scratch[p.starts[j]:p.starts[j+1]])
	}
	return p.args, nil
}

// plainWords splits a line without quotes (the usual inline command, "PING") into views of its
// words, as splitWord would split them, without copying; ok is false when the line holds a
// quote, which only splitWord reads right.
func (p *respParser) plainWords(text []byte) (args [][]byte, ok bool) {
	p.args = p.args[:0]
	for i := 0; i < len(text); {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		start := i
		for ; i < len(text) && !isSpace(text[i]); i++ {
			if text[i] == '"' || text[i] == '\'' {
				return nil, false
			}
		}
		if i > start {
			p.args = append(p.args, text[start:i])
		}
	}
	return p.args, true
}

// splitWord appends the word starting at text[i] to dst, unquoted, and returns the offset after
// it; ok is false for an unclosed quote or a closing quote not followed by a space or the end.
func splitWord(text []byte, i int, dst []byte) ([]byte, int, bool) {
	var quote byte // '"' or '\'' inside quotes
	for ; i < len(text); i++ {
		c := text[i]
		switch {
		case quote == '"' && c == '\\' && i+3 < len(text) && text[i+1] == 'x' && isHex(text[i+2]) && isHex(text[i+3]):
			dst = append(dst, unhex(text[i+2])<<4|unhex(text[i+3]))
			i += 3
		case quote == '"' && c == '\\' && i+1 < len(text):
			i++
			dst = append(dst, unescape(text[i]))
		case quote == '\'' && c == '\\' && i+1 < len(text) && text[i+1] == '\'':
			i++
			dst = append(dst, '\'')
		case quote != 0 && c == quote:
			if i+1 < len(text) && !isSpace(text[i+1]) {
				return dst, i, false // "a"b: the quote must end the word
			}
			return dst, i + 1, true
		case quote != 0:
			dst = append(dst, c)
		case c == '"' || c == '\'':
			quote = c
		case isSpace(c):
			return dst, i, true
		default:
			dst = append(dst, c)
		}
	}
	return dst, i, quote == 0
}

// unescape is the byte a backslash escape stands for inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// parseInt parses a decimal int64 the way Redis's string2ll does: an optional '-', digits, no
// leading zero (but "0"), no '+', no spaces, no overflow.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 { // "-" and 19 digits at most
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64 // 19 digits fit in a uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
