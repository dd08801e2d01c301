//go:build unix

package nethttp

import "bytes"

// headerEnd returns the length of the request head at the start of b: the request line and
// the header fields up to and including the empty line that ends them, each line ending in
// "\n" with an optional "\r" before it, as net/textproto reads them. An empty first line is a
// head of its own (http.ReadRequest refuses it). It returns -1 when b holds no complete head.
func headerEnd(b []byte) int {
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		if j == 0 || j == 1 && b[i] == '\r' {
			return i + j + 1
		}
		i += j + 1
	}
}

// hostFields returns how many Host header fields the head b holds and the value of the first
// as net/textproto reads it: the line trimmed of blanks, joined by a space to each line that
// continues it (obs-fold: a line that starts with a space or a tab), each trimmed too, and the
// value's leading blanks dropped. net/http's server checks them, and http.ReadRequest drops
// them.
func hostFields(b []byte) (n int, first []byte) {
	i := bytes.IndexByte(b, '\n') + 1 // past the request line
	folding := false                  // the lines that continue the first Host field
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			break
		}
		line := b[i : i+j]
		i += j + 1
		if folding {
			if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
				first = append(append(first, ' '), bytes.Trim(line, " \t\r")...)
				continue
			}
			folding = false
			first = bytes.TrimLeft(first, " \t")
		}
		if len(line) >= 5 && line[4] == ':' && (line[0]|0x20) == 'h' && (line[1]|0x20) == 'o' &&
			(line[2]|0x20) == 's' && (line[3]|0x20) == 't' {
			if n == 0 {
				first = bytes.TrimRight(line[5:], " \t\r")
				folding = i < len(b) && (b[i] == ' ' || b[i] == '\t')
				if folding {
					first = append([]byte(nil), first...) // a copy: the joined value is not the head's
				} else {
					first = bytes.TrimLeft(first, " \t")
				}
			}
			n++
		}
	}
	if folding {
		first = bytes.TrimLeft(first, " \t")
	}
	return n, first
}

// The states of chunkScan.
const (
	chunkSize    = iota // at a chunk-size line
	chunkData           // inside a chunk's data (left bytes)
	chunkDataEnd        // at the CRLF after a chunk's data
	chunkTrailer        // after the last chunk: the trailer section
	chunkDone           // the body is complete
	chunkBroken         // the framing is broken: what follows is passed through
)

// maxChunkLine is the longest chunk-size line net/http reads (its bufio.Reader's size).
const maxChunkLine = 4096

// chunkScan finds where a chunked body ends in the bytes that follow its head, so that the
// loop gives the body's reader (net/http's own chunked reader) that many bytes and no more,
// and parses the next request after them. It decodes nothing and checks only what framing
// needs: where it differs from net/http's reader it is more lenient, and a body that the
// reader then refuses closes the connection as it does on net/http.
type chunkScan struct {
	state int
	left  uint64 // chunkData: the bytes of the chunk still to come
	// peek: once done, how many bytes after the body its reader must also see (and leave):
	// net/http reads trailer fields only once it sees "\r\n\r\n" ahead, which a trailer
	// ending in a bare LF finds in the next request.
	peek int
}

// scan returns how many bytes at the start of b belong to the body and can go to its reader
// now, given what came before: a line not yet complete (a chunk size, the CRLF after a chunk,
// the trailer section) waits in the connection's input for its end. s.state is chunkDone
// once the body is complete; after chunkBroken every byte goes to the reader.
func (s *chunkScan) scan(b []byte) int {
	i := 0
	for i < len(b) {
		switch s.state {
		case chunkSize:
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				if len(b)-i >= maxChunkLine {
					s.state = chunkBroken
					continue
				}
				return i // the line is not complete: it waits for its end
			}
			line := b[i : i+j]
			line = bytes.TrimSuffix(line, []byte{'\r'})
			if k := bytes.IndexByte(line, ';'); k >= 0 {
				line = line[:k]
			}
			n, ok := parseHex(bytes.Trim(line, " \t"))
			i += j + 1
			switch {
			case !ok:
				s.state = chunkBroken
			case n == 0:
				s.state = chunkTrailer
			default:
				s.state, s.left = chunkData, n
			}
		case chunkData:
			n := uint64(len(b) - i)
			if n >= s.left {
				i += int(s.left)
				s.state, s.left = chunkDataEnd, 0
				continue
			}
			s.left -= n
			return len(b)
		case chunkDataEnd:
			if len(b)-i < 2 {
				return i
			}
			if b[i] != '\r' || b[i+1] != '\n' {
				s.state = chunkBroken
				continue
			}
			i += 2
			s.state = chunkSize
		case chunkTrailer:
			// Either an empty line at once, or fields up to a blank line ("\r\n\r\n", which
			// net/http requires within its buffer).
			if len(b)-i < 2 {
				return i
			}
			if b[i] == '\r' && b[i+1] == '\n' {
				s.state = chunkDone
				return i + 2
			}
			// net/http reads the fields once a blank line "\r\n\r\n" is within its buffer,
			// up to the first empty line (which may end in a bare LF).
			w := b[i:min(len(b), i+maxChunkLine)]
			if !bytes.Contains(w, []byte("\r\n\r\n")) {
				if len(w) >= maxChunkLine {
					s.state = chunkBroken
					continue
				}
				return i
			}
			s.state = chunkDone
			end := i + headerEnd(b[i:])
			s.peek = i + bytes.Index(w, []byte("\r\n\r\n")) + 4 - end
			return end
		case chunkDone:
			return i
		case chunkBroken:
			return len(b)
		}
	}
	return len(b)
}

// parseHex parses a chunk size: 1 to 16 hexadecimal digits.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, true
}
