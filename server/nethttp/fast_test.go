//go:build linux

package nethttp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// fastHeads are request heads at the edges of what fastRequest reads: each byte in a path
// and in a query, each byte in each place of a name and of a value (their scans take 8 bytes
// at a time), names and values of 7 to 9 and 15 to 17 bytes with a control byte, a blank, a
// ':' or a byte of 0x80 or more in each place, field names in every case, blanks around values, Connection's forms, the
// Host field's absence and repetition, a field too many.
func fastHeads() []string {
	var hs []string
	for c := 0x21; c < 0x7f; c++ {
		hs = append(hs, fmt.Sprintf("GET /a%cb HTTP/1.1\r\nHost: x\r\n\r\n", c))
		hs = append(hs, fmt.Sprintf("GET /a?q%cr HTTP/1.1\r\nHost: x\r\n\r\n", c))
		hs = append(hs, fmt.Sprintf("GET /a HTTP/1.1\r\nHost: x\r\nX-V: a%cb\r\n\r\n", c))
		hs = append(hs, fmt.Sprintf("GET /a HTTP/1.1\r\nHost: x\r\nX%cY: v\r\n\r\n", c))
	}
	for c := range 0x100 { // each byte in each place of a long value's first two words
		for i := range 16 {
			v := []byte(strings.Repeat("v", 20))
			v[i] = byte(c)
			hs = append(hs, "GET /a HTTP/1.1\r\nHost: x\r\nX-V: "+string(v)+"\r\n\r\n")
		}
	}
	for c := range 0x100 { // each byte in each place of a long name's first two words
		for i := range 16 {
			k := []byte(strings.Repeat("k", 20))
			k[i] = byte(c)
			hs = append(hs, "GET /a HTTP/1.1\r\nHost: x\r\n"+string(k)+": v\r\n\r\n")
		}
	}
	for _, n := range []int{7, 8, 9, 15, 16, 17} { // a name's and a value's last byte at each word edge
		hs = append(hs, "GET /a HTTP/1.1\r\nHost: x\r\n"+strings.Repeat("k", n)+": "+strings.Repeat("v", n)+"\r\n\r\n")
		for i := range n {
			for _, c := range []byte{0, '\t', '\n', '\r', ' ', ':', '-', 0x7f, 0x80, 0xff} {
				k, v := []byte(strings.Repeat("k", n)), []byte(strings.Repeat("v", n))
				k[i], v[i] = c, c
				hs = append(hs, "GET /a HTTP/1.1\r\n"+string(k)+": v\r\nHost: x\r\n\r\n",
					"GET /a HTTP/1.1\r\nHost: x\r\nX-K:"+string(v)+"\r\n\r\n",
					"GET /a HTTP/1.1\r\nHost: "+string(v)+"\r\n\r\n")
			}
		}
	}
	for _, c := range []byte{0, '\t', '\r', 0x7f, 0x80, 0xff} {
		hs = append(hs, fmt.Sprintf("GET /a HTTP/1.1\r\nHost: x\r\nX-V: a%cb\r\n\r\n", c))
		hs = append(hs, fmt.Sprintf("GET /a%cb HTTP/1.1\r\nHost: x\r\n\r\n", c))
	}
	hs = append(hs, []string{
		"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.1\r\nConnection: CLOSE\r\n\r\n",
		"GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n",
		"GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n",
		"GET / HTTP/1.1\r\nConnection: close\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.1\r\nhost: x\r\nHOST: y\r\n\r\n",
		"GET / HTTP/1.1\r\nHost:\r\n\r\n",
		"GET / HTTP/1.1\r\nHost:   padded  \t\r\n\r\n",
		"GET / HTTP/1.1\r\nuser-agent: a\r\nACCEPT: */*\r\nx-custom-NAME: b\r\nx-custom-name: c\r\n\r\n",
		"GET / HTTP/1.1\r\nX-Empty:\r\nX-Blank: \t \r\n\r\n",
		"GET / HTTP/1.1\r\nX-A: 1\r\n X-Folded\r\n\r\n",
		"GET / HTTP/1.1\r\n X-A: 1\r\n\r\n",
		"GET / HTTP/1.1\r\nX-A : 1\r\n\r\n",
		"GET / HTTP/1.1\r\n: 1\r\n\r\n",
		"GET / HTTP/1.1\r\nX-A 1\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nTrailer: X\r\n\r\n",
		"GET / HTTP/1.1\r\nPragma: no-cache\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\n",
		"GET / HTTP/1.1\r\nHost: x\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\n",
		"GET /? HTTP/1.1\r\n\r\n",
		"GET /?? HTTP/1.1\r\n\r\n",
		"GET /a?b?c HTTP/1.1\r\n\r\n",
		"GET //a//b HTTP/1.1\r\n\r\n",
		"GET /a?x=%zz HTTP/1.1\r\n\r\n",
		"GET /a HTTP/1.2\r\n\r\n",
		"GET /a HTTP/2.0\r\n\r\n",
		"GET /a  HTTP/1.1\r\n\r\n",
		"GET  /a HTTP/1.1\r\n\r\n",
		"GET /a HTTP/1.1 \r\n\r\n",
		"get /a HTTP/1.1\r\n\r\n",
		"GET http://x/a HTTP/1.1\r\n\r\n",
		"GET * HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\n" + strings.Repeat("X-F: v\r\n", maxFastFields) + "\r\n",
		"GET / HTTP/1.1\r\n" + strings.Repeat("X-F: v\r\n", maxFastFields+1) + "\r\n",
		"GET / HTTP/1.1\r\nX-" + strings.Repeat("long", 40) + ": v\r\n\r\n",
		"GET / HTTP/1.1\r\nx-" + strings.Repeat("long", 40) + ": v\r\n\r\n",
	}...)
	return hs
}

// TestFastRequestIsReadRequests: for each head of the differential corpus and of fastHeads
// that fastRequest reads, http.ReadRequest reads the same Request; and fastRequest reads
// the common head (wrk's GET).
func TestFastRequestIsReadRequests(t *testing.T) {
	heads := fastHeads()
	for _, c := range corpus() {
		if e := headerEnd([]byte(c.raw)); e > 0 {
			heads = append(heads, c.raw[:e])
		}
	}
	fast := 0
	for _, h := range heads {
		got, hosts := fastRequest([]byte(h), context.Background(), new(fastRoom), new(fastScratch))
		if got == nil {
			continue
		}
		fast++
		want, err := http.ReadRequest(bufio.NewReader(strings.NewReader(h)))
		if err != nil {
			t.Errorf("%q: fastRequest read it, http.ReadRequest refused it: %v", h, err)
			continue
		}
		if d := requestDiff(got, want.WithContext(context.Background())); d != "" {
			t.Errorf("%q: %s", h, d)
		}
		if n, first := hostFields([]byte(h)); n != hosts || got.Host != string(first) {
			t.Errorf("%q: fastRequest: %d Host fields, the first %q; hostFields: %d, %q", h, hosts, got.Host, n, first)
		}
	}
	if req, _ := fastRequest([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"), context.Background(), new(fastRoom), new(fastScratch)); req == nil {
		t.Error("fastRequest did not read wrk's GET")
	}
	t.Logf("%d of %d heads read by fastRequest", fast, len(heads))
}

// requestDiff names the first field in which a and b differ, "" when none does.
func requestDiff(a, b *http.Request) string {
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"Method", a.Method, b.Method}, {"URL", *a.URL, *b.URL}, {"Proto", a.Proto, b.Proto},
		{"ProtoMajor", a.ProtoMajor, b.ProtoMajor}, {"ProtoMinor", a.ProtoMinor, b.ProtoMinor},
		{"Header", a.Header, b.Header}, {"Body", a.Body, b.Body},
		{"ContentLength", a.ContentLength, b.ContentLength},
		{"TransferEncoding", a.TransferEncoding, b.TransferEncoding}, {"Close", a.Close, b.Close},
		{"Host", a.Host, b.Host}, {"Trailer", a.Trailer, b.Trailer},
		{"RequestURI", a.RequestURI, b.RequestURI}, {"Form", a.Form, b.Form},
		{"TLS", a.TLS, b.TLS}, {"RemoteAddr", a.RemoteAddr, b.RemoteAddr},
	} {
		if !reflect.DeepEqual(f.a, f.b) {
			return fmt.Sprintf("%s: fastRequest %#v, http.ReadRequest %#v", f.name, f.a, f.b)
		}
	}
	// Whatever else the Request holds (unexported included) is compared whole.
	ca, cb := *a, *b
	ca.Body, cb.Body = nil, nil
	if !reflect.DeepEqual(ca, cb) && !bytes.Equal([]byte(fmt.Sprint(ca)), []byte(fmt.Sprint(cb))) {
		return fmt.Sprintf("the Requests differ: %+v / %+v", ca, cb)
	}
	return ""
}

// TestAddrStringIsString: addrString gives net.Addr's String for IPv4, IPv4-in-IPv6, IPv6,
// zoned, odd-port and non-TCP addresses.
func TestAddrStringIsString(t *testing.T) {
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		&net.TCPAddr{IP: net.IP{10, 200, 3, 255}, Port: 0},
		&net.TCPAddr{IP: net.IPv4(255, 255, 255, 255), Port: 65535},
		&net.TCPAddr{IP: net.IPv6loopback, Port: 443},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"},
		&net.TCPAddr{IP: net.IPv4(1, 2, 3, 4), Port: 70000},
		&net.TCPAddr{IP: net.IPv4(1, 2, 3, 4), Port: -1},
		&net.TCPAddr{Port: 9},
		&net.UnixAddr{Name: "/tmp/s", Net: "unix"},
	} {
		if got, want := addrString(a), a.String(); got != want {
			t.Errorf("addrString(%#v) = %q, String() = %q", a, got, want)
		}
	}
}

// TestFastRequestRepeatedHeadAllocatesOnlyItsHeader: a head the loop read last (a client that
// repeats its request) is not copied again: its Request's strings share the last one's, and
// fastRequest allocates only the Request's header map.
func TestFastRequestRepeatedHeadAllocatesOnlyItsHeader(t *testing.T) {
	head := []byte("GET /plaintext?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
	sc, room := new(fastScratch), new(fastRoom)
	if req, _ := fastRequest(head, context.Background(), room, sc); req == nil {
		t.Fatal("fastRequest did not read the head")
	}
	allocs := testing.AllocsPerRun(100, func() {
		*room = fastRoom{}
		fastRequest(head, context.Background(), room, sc)
	})
	if allocs != 1 {
		t.Fatalf("fastRequest of a repeated head: %v allocations; want 1 (the header map)", allocs)
	}
	if room.req.Host != "127.0.0.1:8080" || room.url.RawQuery != "x=1" {
		t.Fatalf("Host %q, RawQuery %q", room.req.Host, room.url.RawQuery)
	}
}

// TestFastScratchHostValidKeepsNoLongHead: the Host value hostValid keeps (found valid, not
// checked again) is not one of a long head's: it is part of that head's string, which it
// would keep alive on the loop until another Host came.
func TestFastScratchHostValidKeepsNoLongHead(t *testing.T) {
	head := []byte("GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 64<<10) + "\r\n\r\n")
	sc := new(fastScratch)
	req, _ := fastRequest(head, context.Background(), new(fastRoom), sc)
	if req == nil {
		t.Fatal("fastRequest did not read the head")
	}
	if !sc.hostValid(req.Host, len(head)) {
		t.Fatalf("hostValid(%q) = false", req.Host)
	}
	if sc.goodHost != "" && unsafe.StringData(sc.goodHost) == unsafe.StringData(req.Host) {
		t.Fatalf("the Host kept is the %d-byte head's (its string stays alive)", len(head))
	}
}

// TestFastScratchScanEndsWhereItsHeadEnds: scan, which reads the input, finds each head of
// fastHeads that it reads at its end whatever bytes follow it (a pipelined request's, the
// first bytes of one, blanks, none), and reads no part of a head as a whole one (its 8-byte
// reads stop at the input's end).
func TestFastScratchScanEndsWhereItsHeadEnds(t *testing.T) {
	var sc fastScratch
	for _, h := range fastHeads() {
		end := sc.scan([]byte(h))
		if end != -1 && end != len(h) {
			t.Errorf("%q: scan %d, want %d or -1", h, end, len(h))
		}
		for _, rest := range []string{"G", "\r\n", "\n", ":", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", strings.Repeat("x", 20)} {
			if got := sc.scan([]byte(h + rest)); got != end {
				t.Errorf("%q followed by %q: scan %d, alone %d", h, rest, got, end)
			}
		}
		for n := range len(h) {
			if got := sc.scan([]byte(h[:n])); got != -1 {
				t.Errorf("%q: its first %d bytes: scan %d, want -1", h, n, got)
			}
		}
	}
}
