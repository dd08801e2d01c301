//go:build linux

package nethttp

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// TestEarlyErrorReadsNoEmptyHead: an empty head (the 4 stray CRLFs net/http skips after a
// POST, and nothing after them) has no error and is not read: no reader taken, nothing
// allocated, no panic recovered.
func TestEarlyErrorReadsNoEmptyHead(t *testing.T) {
	var err error
	allocs := testing.AllocsPerRun(100, func() { err = earlyError(nil) })
	if err != nil || allocs != 0 {
		t.Fatalf("earlyError of an empty head: %v, %v allocations; want nil and none", err, allocs)
	}
}

// browserHead is a request head of 949 bytes, of the size a browser sends.
var browserHead = []byte("GET /some/page/of/a/site?with=a&query=string HTTP/1.1\r\n" +
	"Host: www.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
	"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n" +
	"Accept-Language: en-US,en;q=0.5\r\n" +
	"Accept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Referer: https://www.example.com/another/page/of/the/same/site\r\n" +
	"Connection: keep-alive\r\n" +
	"Cookie: session=0123456789abcdef0123456789abcdef; prefs=dark-mode; tracking=no; a-longer-cookie=" + strings.Repeat("x", 300) + "\r\n" +
	"Upgrade-Insecure-Requests: 1\r\n" +
	"Sec-Fetch-Dest: document\r\n" +
	"Sec-Fetch-Mode: navigate\r\n" +
	"Sec-Fetch-Site: same-origin\r\n" +
	"Priority: u=0, i\r\n" +
	"\r\n")

// BenchmarkHeadScanByteByByte: next's look at a head that comes a byte at a time (a look per
// byte, as a client that writes each byte apart makes it), per head.
func BenchmarkHeadScanByteByByte(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var s headScan
		for n := 1; n <= len(browserHead); n++ {
			if end, err := s.look(browserHead[:n], 1<<20); end >= 0 || err != nil {
				if end != len(browserHead) || err != nil {
					b.Fatalf("look at %d bytes: end %d, %v", n, end, err)
				}
			}
		}
	}
}

// TestHeadScanByteByByteFindsWhatEachWholeReadingFinds: for every input of the differential
// corpus, come a byte at a time, each look finds what reading all of the input so far finds:
// the head's end, and net/http's reader's error in a head not complete (earlyError), though it
// reads the head again only when a line has ended or the byte after one has come.
func TestHeadScanByteByByteFindsWhatEachWholeReadingFinds(t *testing.T) {
	for _, c := range corpus() {
		raw := []byte(c.raw)
		var s headScan
		for n := 1; n <= len(raw); n++ {
			in := raw[:n]
			wantEnd, wantErr := headerEnd(in), error(nil)
			if wantEnd < 0 && n <= earlyMax {
				wantErr = earlyError(in)
			}
			end, err := s.look(in, 1<<20)
			if end != wantEnd || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("%s, %d bytes: look found %d, %v; reading them all: %d, %v", c.name, n, end, err, wantEnd, wantErr)
			}
			if end >= 0 || err != nil { // next answers it, and looks no more
				break
			}
		}
	}
}

// TestReqStateTakesThe512ByteSizeClass: a request's state, allocated for each request, is at
// most 512 bytes, so that it takes the 512-byte size class without the allocator's 8-byte
// header (objects over 512 bytes with pointers have one).
func TestReqStateTakesThe512ByteSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(reqState{}); n > 512 {
		t.Fatalf("reqState is %d bytes; want at most 512", n)
	}
}
