//go:build linux

package server

import (
	"bytes"
	"fmt"
	"testing"
)

// Fuzz tests of the two parsers, seeded with real requests. Run one with
// `go test -fuzz FuzzRESP -fuzztime 30s ./server`; scripts/test.sh runs each for a few seconds.

// maxReply bounds one reply to the small inputs the fuzzer makes: an LRANGE of a list as long as
// the input's pushes, or an error quoting 128 bytes of it.
func maxReply(in []byte) int { return 4096 + 32*len(in) }

// FuzzRESP: whatever a client sends, serve neither panics nor consumes more than it was given nor
// leaves unbounded output, and the parser finds the same commands whether the input arrives in
// one read or in two.
func FuzzRESP(f *testing.F) {
	for _, r := range benchmarkRequests {
		f.Add([]byte(r), uint16(len(r)/2))
	}
	f.Add([]byte("SET k \"a\\x41b\" 'c'\r\nGET k\r\nLPUSH l a b\r\nLRANGE l 0 -1\r\nZADD z 1 a\r\nZPOPMIN z 2\r\n"), uint16(7))
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*1\r\n$x\r\n"), uint16(3))
	f.Add([]byte("*2\r\n$4\r\nPING\r\n$1\r\nabcd\r\nQUIT\r\nPING\r\n"), uint16(12))
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		r := NewRESP(NewKeyspace())
		n, out, closeAfter := r.serve(in, nil, outputLimit)
		if n < 0 || n > len(in) || !closeAfter && n < len(in) && len(out) < outputLimit && completeRESP(in[n:]) {
			t.Fatalf("consumed %d of %d bytes (close %v)", n, len(in), closeAfter)
		}
		if len(out) > outputLimit+maxReply(in) {
			t.Fatalf("%d bytes of output for %d bytes of input", len(out), len(in))
		}
		whole := parseAll(in, len(in))
		if split := parseAll(in, int(cut)%(len(in)+1)); whole != split {
			t.Fatalf("in one read: %s\nin two: %s", whole, split)
		}
		if fast, slow := respNext(string(in), false), respNext(string(in), true); fast != slow {
			t.Fatalf("%q: the parser found %s, its general rules %s", in, fast, slow)
		}
		var fast, slow respParser
		if plain, ok := fast.plainWords(in); ok { // a line without quotes: both splits agree
			quoted, err := slow.quotedWords(in)
			if err != nil || fmt.Sprintf("%q", plain) != fmt.Sprintf("%q", quoted) {
				t.Fatalf("%q: split without copies %q, by sdssplitargs's rules %q (%v)", in, plain, quoted, err)
			}
		}
	})
}

// completeRESP reports whether b starts with a complete command or a protocol error.
func completeRESP(b []byte) bool {
	var p respParser
	_, n, err := p.next(b)
	return n > 0 || err != nil
}

// parseAll runs the parser over in as a connection would receive it: first in[:cut], then all of
// it (the unconsumed bytes with the rest after them). It returns the commands and the error found.
func parseAll(in []byte, cut int) string {
	var p respParser
	var got bytes.Buffer
	buf, pos := in[:cut], 0
	for round := 0; round < 2; round++ {
		for pos < len(buf) {
			args, n, err := p.next(buf[pos:])
			if err != nil {
				fmt.Fprintf(&got, "error %v", err)
				return got.String()
			}
			if n == 0 {
				break
			}
			fmt.Fprintf(&got, "%q ", args)
			pos += n
		}
		buf = in
	}
	return got.String()
}

// FuzzHTTP: whatever a client sends, serve neither panics nor consumes more than it was given nor
// leaves unbounded output, and answers the same whether the input arrives in one read or in two.
func FuzzHTTP(f *testing.F) {
	for _, r := range []string{wrkRequest, curlRequest, wrkRequest + wrkRequest,
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc" + wrkRequest,
		"HEAD /plaintext HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"} {
		f.Add([]byte(r), uint16(len(r)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		if fast, slow := httpParse(string(in), false), httpParse(string(in), true); fast != slow {
			t.Fatalf("%q: the parser found %s, its general rules %s", in, fast, slow)
		}
		whole, closeWhole := serveInTwo(t, in, len(in))
		split, closeSplit := serveInTwo(t, in, int(cut)%(len(in)+1))
		if whole != split || closeWhole != closeSplit {
			t.Fatalf("in one read (close %v):\n%q\nin two (close %v):\n%q", closeWhole, whole, closeSplit, split)
		}
		if len(whole) > outputLimit+maxReply(in) {
			t.Fatalf("%d bytes of output for %d bytes of input", len(whole), len(in))
		}
	})
}

// serveInTwo runs in through an HTTP server as a connection would receive it, in[:cut] and then
// the rest, and returns the responses and closeAfter.
func serveInTwo(t *testing.T, in []byte, cut int) (string, bool) {
	h := NewHTTP()
	h.setDate(testDate)
	var out []byte
	buf, pos := in[:cut], 0
	for round := 0; round < 2; round++ {
		n, o, closeAfter := h.serve(buf[pos:], out, outputLimit)
		if n < 0 || n > len(buf)-pos {
			t.Fatalf("consumed %d of %d bytes", n, len(buf)-pos)
		}
		out, pos = o, pos+n
		if closeAfter {
			return string(out), true
		}
		buf = in
	}
	return string(out), false
}
