//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoCloser is the echo server, telling each connection's close reason to closed.
type echoCloser struct {
	Echo
	closed chan error
}

func newEchoCloser() *echoCloser { return &echoCloser{closed: make(chan error, 2000)} }

func (h *echoCloser) OnClose(_ *Conn, err error) { h.closed <- err }

// reason waits for a connection to close and returns its reason.
func (h *echoCloser) reason(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.closed:
		return err
	case <-time.After(waitFor):
		t.Fatalf("no connection closed within %v", waitFor)
		return nil
	}
}

// nbTransport is a net.Conn as the loop's transport is once the handshake has ended: Read
// returns what was fed, then an error whose Temporary() is true.
type nbTransport struct {
	net.Conn    // the handshake's, until nonblocking
	nonblocking bool
	in          []byte
}

func (n *nbTransport) Read(p []byte) (int, error) {
	if !n.nonblocking {
		return n.Conn.Read(p)
	}
	if len(n.in) == 0 {
		return 0, errWouldBlock
	}
	c := copy(p, n.in)
	n.in = n.in[c:]
	return c, nil
}

// TestTLSReadSurvivesTemporaryError pins what the loop's record path stands on: crypto/tls's
// Read returns a transport error whose Temporary() is true without making it permanent, keeps
// the part of a record it read, and decrypts the record once the rest arrives.
func TestTLSReadSurvivesTemporaryError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	sraw, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer sraw.Close()
	sraw.SetDeadline(time.Now().Add(waitFor))
	raw.SetDeadline(time.Now().Add(waitFor))
	tr := &nbTransport{Conn: sraw}
	srv := tls.Server(tr, tlsServerConfig(t))
	cli := tls.Client(raw, tlsClientConfig(t))
	hs := make(chan error, 1)
	go func() { hs <- cli.Handshake() }()
	if err := srv.Handshake(); err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	if err := <-hs; err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	tr.nonblocking = true
	buf := make([]byte, 100)
	for i, msg := range []string{"first record", "second record"} {
		if _, err := cli.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		rec := make([]byte, 5)
		if _, err := io.ReadFull(sraw, rec); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, int(rec[3])<<8|int(rec[4]))
		if _, err := io.ReadFull(sraw, body); err != nil {
			t.Fatal(err)
		}
		rec = append(rec, body...)
		tr.in = rec[:3] // part of the header
		n, err := srv.Read(buf)
		var ne net.Error
		//lint:ignore SA1019 crypto/tls decides on Temporary(): this test pins what it does
		if n != 0 || !errors.As(err, &ne) || !ne.Temporary() {
			t.Fatalf("record %d: Read with part of a header = %d, %v; want 0 and the Temporary error", i, n, err)
		}
		tr.in = rec[3 : len(rec)-1] // all but the record's last byte
		if n, err := srv.Read(buf); n != 0 || !errors.Is(err, errWouldBlock) {
			t.Fatalf("record %d: Read with all but a byte = %d, %v; want 0 and the Temporary error", i, n, err)
		}
		tr.in = rec[len(rec)-1:]
		n, err = srv.Read(buf)
		if err != nil || string(buf[:n]) != msg {
			t.Fatalf("record %d: Read once the record is whole = %q, %v; want %q", i, buf[:n], err, msg)
		}
	}
}

// tlsEngine serves h over TLS on setup s.
func tlsEngine(t *testing.T, s setup, h Handler, opts ...Option) *Engine {
	t.Helper()
	return startEngine(t, h, append(append(s.opts(), WithTLS(tlsServerConfig(t))), opts...)...)
}

// echoSize is the TLS echo test's size: 100 MB, or 8 MB under the race detector.
func echoSize() int {
	if raceEnabled {
		return 8 << 20
	}
	return 100 << 20
}

// TestTLSEchoDeliversEveryByteInOrder: a large echo over TLS (100 MB; 8 MB under -race) comes
// back whole and in order, while the client writes and reads at once.
func TestTLSEchoDeliversEveryByteInOrder(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, Echo{})
		c := dialTLS(t, e, nil)
		c.SetDeadline(time.Now().Add(3 * waitFor))
		size := echoSize()
		werr := make(chan error, 1)
		go func() {
			chunk := make([]byte, 64<<10)
			for off := 0; off < size; off += len(chunk) {
				for i := range chunk {
					chunk[i] = byte((off + i) % 251)
				}
				if _, err := c.Write(chunk[:min(len(chunk), size-off)]); err != nil {
					werr <- err
					return
				}
			}
			werr <- nil
		}()
		buf := make([]byte, 64<<10)
		for got := 0; got < size; {
			n, err := c.Read(buf)
			for i := range n {
				if buf[i] != byte((got+i)%251) {
					t.Fatalf("byte %d: %d, want %d", got+i, buf[i], byte((got+i)%251))
				}
			}
			got += n
			if err != nil {
				t.Fatalf("after %d of %d bytes: %v", got, size, err)
			}
		}
		if err := <-werr; err != nil {
			t.Fatalf("writing: %v", err)
		}
	})
}

// TestTLSConcurrentClientsDeliverEveryLine: 50 TLS clients at once, 200 lines each, get every
// line back in order.
func TestTLSConcurrentClientsDeliverEveryLine(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, newRecorder())
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for k := range 50 {
			c := dialTLS(t, e, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				go func() {
					w := bufio.NewWriter(c)
					for i := range 200 {
						fmt.Fprintf(w, "client %d line %d\n", k, i)
					}
					w.Flush()
				}()
				r := bufio.NewReader(c)
				for i := range 200 {
					line, err := r.ReadString('\n')
					if want := fmt.Sprintf("client %d line %d\n", k, i); line != want || err != nil {
						errs <- fmt.Errorf("client %d: got %q, %v; want %q", k, line, err, want)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestTLSConnGivesConnectionState: Conn.TLS gives the version, cipher suite and ALPN the
// handshake chose; nil on a connection without TLS.
func TestTLSConnGivesConnectionState(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		states := make(chan *tls.ConnectionState, 1)
		r.line = func(c *Conn, line string) {
			states <- c.TLS()
			c.WriteString(line + "\n")
		}
		cfg := tlsServerConfig(t)
		cfg.NextProtos = []string{"ringev-test"}
		e := startEngine(t, r, append(s.opts(), WithTLS(cfg))...)
		ccfg := tlsClientConfig(t)
		ccfg.NextProtos = []string{"ringev-test"}
		c := dialTLS(t, e, ccfg)
		c.Write([]byte("hi\n"))
		if got := readN(t, c, 3); got != "hi\n" {
			t.Fatalf("echo: %q", got)
		}
		st := <-states
		cs := c.ConnectionState()
		if st == nil || !st.HandshakeComplete || st.Version != cs.Version || st.CipherSuite != cs.CipherSuite || st.NegotiatedProtocol != "ringev-test" {
			t.Fatalf("Conn.TLS() = %+v; want the client's version %x, suite %x, ALPN ringev-test", st, cs.Version, cs.CipherSuite)
		}
		plain := startEngine(t, r, s.opts()...)
		pc := dialEngine(t, plain)
		pc.Write([]byte("hi\n"))
		readN(t, pc, 3)
		if st := <-states; st != nil {
			t.Fatalf("Conn.TLS() without TLS = %+v; want nil", st)
		}
	})
}

// sendGarbageHello connects to e and sends bytes that are not a TLS record in place of a
// ClientHello, then reads until the server closes.
func sendGarbageHello(t *testing.T, e *Engine) {
	t.Helper()
	c := dialEngine(t, e)
	c.Write([]byte("\x01\x02\x03\x04\x05garbage garbage garbage\n"))
	readToEOF(t, c)
}

// TestTLSGarbageInsteadOfClientHelloCloses: bytes that are not a TLS record close the
// connection, and OnClose names the handshake and crypto/tls's error.
func TestTLSGarbageInsteadOfClientHelloCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		sendGarbageHello(t, tlsEngine(t, s, h))
		err := h.reason(t)
		var rh tls.RecordHeaderError
		if !errors.As(err, &rh) || !strings.Contains(err.Error(), "TLS handshake") {
			t.Fatalf("OnClose: %v; want a TLS handshake error wrapping tls.RecordHeaderError", err)
		}
	})
}

// TestTLSCutOffClientHelloTimesOut: part of a ClientHello, then silence, is closed after the
// handshake timeout (the request timeout) with ErrTLSHandshakeTimeout.
func TestTLSCutOffClientHelloTimesOut(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		e := tlsEngine(t, s, h, WithRequestTimeout(200*time.Millisecond))
		c := dialEngine(t, e)
		hello := clientHello(t)
		c.Write(hello[:len(hello)/2])
		if err := h.reason(t); !errors.Is(err, ErrTLSHandshakeTimeout) {
			t.Fatalf("OnClose: %v; want ErrTLSHandshakeTimeout", err)
		}
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("the connection is still open")
		}
	})
}

// badRecordTest sends, after the handshake, what corrupt makes of the client's next record, and
// checks the alert the client gets and the reason OnClose gets.
func badRecordTest(t *testing.T, s setup, corrupt func([]byte) []byte, alert, reason string) {
	h := newEchoCloser()
	e := tlsEngine(t, s, h)
	raw := &tapConn{Conn: dialEngine(t, e)}
	c := handshakeOver(t, raw, nil)
	c.Write([]byte("ping"))
	if got := readN(t, c, 4); got != "ping" {
		t.Fatalf("echo: %q", got)
	}
	raw.mu.Lock()
	raw.corrupt = corrupt
	raw.mu.Unlock()
	c.Write([]byte("pong"))
	_, err := io.ReadAll(c)
	if err == nil || !strings.Contains(err.Error(), alert) {
		t.Fatalf("client read: %v; want the alert %q", err, alert)
	}
	got := h.reason(t)
	if got == nil || !strings.Contains(got.Error(), "TLS record") || !strings.Contains(got.Error(), reason) {
		t.Fatalf("OnClose: %v; want a TLS record error naming %q", got, reason)
	}
}

// TestTLSOversizedRecordAlertsAndCloses: a record longer than TLS allows gets the record_overflow
// alert and a close.
func TestTLSOversizedRecordAlertsAndCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		badRecordTest(t, s, func([]byte) []byte {
			return append([]byte{23, 3, 3, 0x50, 0}, make([]byte, 0x5000)...)
		}, "record overflow", "oversized record")
	})
}

// TestTLSBadMACAlertsAndCloses: a record whose authentication fails gets the bad_record_mac
// alert and a close.
func TestTLSBadMACAlertsAndCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		badRecordTest(t, s, func(b []byte) []byte {
			b[len(b)-1] ^= 0x55
			return b
		}, "bad record MAC", "bad record MAC")
	})
}

// TestTLSPlaintextHTTPGetsNetHTTPAnswer: plaintext HTTP to the HTTP server's TLS port gets the
// answer net/http gives, then the close.
func TestTLSPlaintextHTTPGetsNetHTTPAnswer(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, NewHTTP())
		c := dialEngine(t, e)
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		const want = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
		if got := readToEOF(t, c); got != want {
			t.Fatalf("got %q; want %q", got, want)
		}
	})
}

// stallHandshakes connects n clients to e that each send hello (a whole ClientHello) and then
// nothing; cleanup closes them.
func stallHandshakes(t *testing.T, e *Engine, hello []byte, n int) {
	t.Helper()
	for range n {
		dialEngine(t, e).Write(hello)
	}
}

// TestTLSStalledHandshakesKeepGoroutinesBounded: 1,000 clients that send a whole ClientHello
// and stall hold at most WithMaxTLSHandshakes goroutines; the handshake timeout closes them all.
func TestTLSStalledHandshakesKeepGoroutinesBounded(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		const n, most = 1000, 64
		h := newEchoCloser()
		e := tlsEngine(t, s, h, WithRequestTimeout(2*time.Second), WithMaxTLSHandshakes(most))
		base := runtime.NumGoroutine() // before clientHello, whose goroutine may end after it
		stallHandshakes(t, e, clientHello(t), n)
		peak := 0
		for range n {
			select {
			case err := <-h.closed:
				if !errors.Is(err, ErrTLSHandshakeTimeout) {
					t.Fatalf("OnClose: %v; want ErrTLSHandshakeTimeout", err)
				}
			case <-time.After(3 * waitFor):
				t.Fatalf("stalled handshakes not closed within %v", 3*waitFor)
			}
			peak = max(peak, runtime.NumGoroutine()-base)
		}
		if peak > most+8 {
			t.Fatalf("%d more goroutines with %d stalled handshakes; want at most %d", peak, n, most+8)
		}
		t.Logf("%d stalled handshakes: at most %d more goroutines", n, peak)
	})
}

// TestTLSStalledHandshakesLeaveOthersServed: with the defaults, 200 clients that send a whole
// ClientHello and stall (each holding a handshake's goroutine) do not delay another client's
// handshake: it ends while they all still wait for their timeout.
func TestTLSStalledHandshakesLeaveOthersServed(t *testing.T) {
	eachBackendRequests(t, func(t *testing.T, s setup) {
		const n = 200
		h := newEchoCloser()
		e := tlsEngine(t, s, h, WithRequestTimeout(time.Hour))
		base := runtime.NumGoroutine() // before clientHello, whose goroutine may end after it
		stallHandshakes(t, e, clientHello(t), n)
		eventually(t, fmt.Sprintf("%d stalled handshakes running", n), func() bool { return runtime.NumGoroutine()-base >= n })
		c := dialTLS(t, e, nil)
		c.Write([]byte("x"))
		readN(t, c, 1)
		c.Close()
		select {
		case err := <-h.closed:
			if errors.Is(err, ErrTLSHandshakeTimeout) {
				t.Fatalf("a stalled handshake timed out within the hour: %v", err)
			}
		default:
		}
	})
}

// TestTLSCloseWithoutCloseNotifyNamesIt: a client that closes its socket without close_notify
// closes the connection with ErrTLSNoCloseNotify (which wraps io.EOF); one that sends it, with
// io.EOF.
func TestTLSCloseWithoutCloseNotifyNamesIt(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		e := tlsEngine(t, s, h)
		raw := dialEngine(t, e)
		c := handshakeOver(t, raw, nil)
		c.Write([]byte("x"))
		readN(t, c, 1)
		raw.Close() // no close_notify
		if err := h.reason(t); err != ErrTLSNoCloseNotify || !errors.Is(err, io.EOF) {
			t.Fatalf("without close_notify, OnClose: %v; want ErrTLSNoCloseNotify", err)
		}
		c = dialTLS(t, e, nil)
		c.Write([]byte("x"))
		readN(t, c, 1)
		c.Close() // close_notify, then the socket's close
		if err := h.reason(t); err != io.EOF {
			t.Fatalf("with close_notify, OnClose: %v; want io.EOF", err)
		}
	})
}

// TestTLSCloseSendsCloseNotify: Conn.Close sends what was written, then close_notify (an alert
// record: TLS 1.2 shows its type), then the TCP close.
func TestTLSCloseSendsCloseNotify(t *testing.T) {
	checkCloseNotifyAfter(t, func(c *Conn) { c.Close() })
}

// TestTLSCloseWriteSendsCloseNotify: Conn.CloseWrite sends what was written, then close_notify,
// then the FIN, as tls.Conn.CloseWrite does.
func TestTLSCloseWriteSendsCloseNotify(t *testing.T) {
	checkCloseNotifyAfter(t, func(c *Conn) { c.CloseWrite() })
}

// checkCloseNotifyAfter serves a line's echo followed by end (a Close or a CloseWrite) and
// checks, in every setup, that the client reads the echo, then EOF, and that the last record
// was an alert (close_notify).
func checkCloseNotifyAfter(t *testing.T, end func(c *Conn)) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			c.WriteString(line + "\n")
			end(c)
		}
		e := tlsEngine(t, s, r)
		cfg := tlsClientConfig(t)
		cfg.MaxVersion = tls.VersionTLS12
		raw := &recordTap{Conn: dialEngine(t, e)}
		c := handshakeOver(t, raw, cfg)
		c.Write([]byte("bye\n"))
		if got, err := io.ReadAll(c); string(got) != "bye\n" || err != nil {
			t.Fatalf("read %q, %v; want %q and EOF", got, err, "bye\n")
		}
		if typ := raw.lastRecordType(); typ != 21 {
			t.Fatalf("the last record's type is %d; want 21 (alert: close_notify)", typ)
		}
	})
}

// recordTap keeps what it reads, and tells the types of the records in it.
type recordTap struct {
	net.Conn
	got []byte
}

func (r *recordTap) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.got = append(r.got, b[:n]...)
	return n, err
}

// lastRecordType is the type of the last whole record read (0: none).
func (r *recordTap) lastRecordType() byte {
	var last byte
	for b := r.got; len(b) >= 5; {
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if len(b) < n {
			break
		}
		last, b = b[0], b[n:]
	}
	return last
}

// TestTLSSessionResumption: a client that comes back with its session ticket resumes.
func TestTLSSessionResumption(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, Echo{})
		cfg := tlsClientConfig(t)
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		for i, want := range []bool{false, true} {
			c := dialTLS(t, e, cfg)
			c.Write([]byte("x")) // the ticket comes after the handshake: read it
			readN(t, c, 1)
			if got := c.ConnectionState().DidResume; got != want {
				t.Fatalf("connection %d: DidResume %v; want %v", i, got, want)
			}
			c.Close()
		}
	})
}

// TestTLSRenegotiationRefused: a TLS 1.2 client that asks for a new handshake gets an alert and
// the close.
func TestTLSRenegotiationRefused(t *testing.T) {
	h := newEchoCloser()
	e := tlsEngine(t, setup{backend: "epoll", api: APIRequests}, h)
	cfg := tlsClientConfig(t)
	cfg.MaxVersion = tls.VersionTLS12
	raw := &tapConn{Conn: dialEngine(t, e)}
	c := handshakeOver(t, raw, cfg)
	c.Write([]byte("x"))
	readN(t, c, 1)
	// A second ClientHello, in the clear but where an encrypted record is due: the server
	// takes it as a record whose MAC fails, or as a handshake message it refuses.
	raw.Conn.Write(clientHello(t))
	if err := h.reason(t); err == nil || !strings.Contains(err.Error(), "TLS record") {
		t.Fatalf("OnClose: %v; want a TLS record error", err)
	}
}

// TestTLSOpenSSLKeyUpdate: openssl s_client's KeyUpdate asking for the server's (its command
// "K") is handled: the server answers with its own while it reads, and the echo goes on with
// the new keys.
func TestTLSOpenSSLKeyUpdate(t *testing.T) {
	openssl := needProgram(t, "openssl", "openssl")
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		e := tlsEngine(t, s, h)
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cmd := exec.CommandContext(ctx, openssl, "s_client", "-connect", e.Addr().String(), "-tls1_3")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		errPipe, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			in.Close()
			cancel()
			cmd.Wait()
		}()
		// s_client says KEYUPDATE on stderr once it has sent one; a line typed before that
		// would be read with the command and dropped.
		updated := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(errPipe)
			for sc.Scan() {
				if sc.Text() == "KEYUPDATE" {
					close(updated)
				}
			}
		}()
		r := bufio.NewReader(out)
		expect := func(want string) {
			t.Helper()
			for {
				line, err := r.ReadString('\n')
				if line == want {
					return
				}
				if err != nil {
					t.Fatalf("no echo of %q: %v (OnClose: %v)", want, err, h.reason(t))
				}
			}
		}
		io.WriteString(in, "before\n")
		expect("before\n")
		io.WriteString(in, "K\n") // a KeyUpdate with update_requested
		select {
		case <-updated:
		case <-time.After(waitFor):
			t.Fatal("openssl sent no KeyUpdate")
		}
		io.WriteString(in, "after\n")
		expect("after\n")
		in.Close()
		if err := h.reason(t); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("OnClose: %v", err)
		}
	})
}

// TestTLSCurlGetsHTTP: curl --insecure gets the HTTP server's answer over TLS.
func TestTLSCurlGetsHTTP(t *testing.T) {
	curl := needProgram(t, "curl", "curl")
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, NewHTTP())
		url := "https://" + e.Addr().String() + "/plaintext"
		if out := runClient(t, curl, "-s", "--insecure", "--max-time", "10", url, url); out != "Hello, World!Hello, World!" {
			t.Fatalf("curl: %q", out)
		}
	})
}

// wantHTTP1ByALPN connects to e, which serves HTTP over TLS, as a client that offers "h2" and
// "http/1.1" does, and fails unless ALPN chose "http/1.1" and a GET is answered.
func wantHTTP1ByALPN(t *testing.T, e *Engine) {
	t.Helper()
	client := tlsClientConfig(t)
	client.NextProtos = []string{"h2", "http/1.1"}
	c := dialTLS(t, e, client)
	if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Fatalf("ALPN negotiated %q, want http/1.1", p)
	}
	c.Write([]byte("GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	if got := readToEOF(t, c); !strings.HasSuffix(got, "\r\n\r\nHello, World!") {
		t.Fatalf("got %q", got)
	}
}

// TestTLSHTTPSHandlerNegotiatesHTTP1WhenTheConfigOffersH2: an HTTPSHandler (the HTTP server)
// given a tls.Config that offers "h2" (autocert's TLSConfig does, as configs made for net/http
// often do) negotiates "http/1.1" with a client that offers both, and answers it in HTTP/1.1,
// instead of agreeing to HTTP/2 and then answering in HTTP/1.1, which such a client cannot read.
func TestTLSHTTPSHandlerNegotiatesHTTP1WhenTheConfigOffersH2(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		cfg := tlsServerConfig(t)
		cfg.NextProtos = []string{"h2", "acme-tls/1"}
		e := startEngine(t, NewHTTP(), append(s.opts(), WithTLS(cfg))...)
		wantHTTP1ByALPN(t, e)
		if len(cfg.NextProtos) != 2 || cfg.NextProtos[0] != "h2" {
			t.Fatalf("the caller's config was changed: NextProtos %q", cfg.NextProtos)
		}
	})
}

// TestTLSHTTPSHandlerNegotiatesHTTP1WhenGetConfigForClientOffersH2: the same when the config
// offering "h2" comes from the server config's GetConfigForClient.
func TestTLSHTTPSHandlerNegotiatesHTTP1WhenGetConfigForClientOffersH2(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		perClient := tlsServerConfig(t)
		perClient.NextProtos = []string{"h2", "http/1.1"}
		cfg := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return perClient, nil }}
		e := startEngine(t, NewHTTP(), append(s.opts(), WithTLS(cfg))...)
		wantHTTP1ByALPN(t, e)
	})
}

// TestTLSRedisCLIGetsRESP: redis-cli --tls talks to the RESP server over TLS.
func TestTLSRedisCLIGetsRESP(t *testing.T) {
	cli := needProgram(t, "redis-cli", "redis-tools")
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, respServer())
		_, port, _ := net.SplitHostPort(e.Addr().String())
		args := []string{"-h", "127.0.0.1", "-p", port, "--tls", "--insecure"}
		if out := runClient(t, cli, append(args, "SET", "k", "tls")...); strings.TrimSpace(out) != "OK" {
			t.Fatalf("SET: %q", out)
		}
		if out := runClient(t, cli, append(args, "GET", "k")...); strings.TrimSpace(out) != "tls" {
			t.Fatalf("GET: %q", out)
		}
	})
}

// TestTLSWrkOverHTTPS: wrk over https (256 connections) gets only 200s.
func TestTLSWrkOverHTTPS(t *testing.T) {
	wrk := needProgram(t, "wrk", "wrk")
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, NewHTTP())
		out := runClient(t, wrk, "-t1", "-c256", "-d1s", "https://"+e.Addr().String()+"/plaintext")
		if !strings.Contains(out, "requests in") || strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors") {
			t.Fatalf("wrk:\n%s", out)
		}
	})
}

// TestTLSPeerCloseBeforeHelloCloses: a client that connects and closes without a byte is
// closed at once (not at the handshake timeout), with an error naming the handshake and
// wrapping io.EOF (crypto/tls's), though OnOpen wrote a greeting that waits for the handshake.
func TestTLSPeerCloseBeforeHelloCloses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.greet = "hello\n"
		e := tlsEngine(t, s, r)
		for range 4 {
			c := dialEngine(t, e)
			c.Close()
			_, err := r.closedWith(t)
			if !errors.Is(err, io.EOF) || !errors.Is(err, ErrTLSHandshake) {
				t.Fatalf("OnClose: %v; want a TLS handshake error wrapping io.EOF", err)
			}
		}
	})
}

// TestTLSPeerCloseWithinTheHandshakeSaysWhatCryptoTLSSays: a client that sends nothing, part
// of a record header, or a whole ClientHello and then shuts its writing side is closed with an
// error wrapping ErrTLSHandshake and what crypto/tls's own server says of the same bytes
// (io.EOF at a record's boundary, io.ErrUnexpectedEOF within a record).
func TestTLSPeerCloseWithinTheHandshakeSaysWhatCryptoTLSSays(t *testing.T) {
	inputs := map[string][]byte{"nothing": nil, "a cut header": {22, 3}, "a ClientHello": clientHello(t)}
	want := map[string]error{}
	for name, in := range inputs {
		want[name] = cryptoTLSHandshakeAfter(t, in)
	}
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		e := tlsEngine(t, s, h)
		for name, in := range inputs {
			c := dialEngine(t, e)
			c.Write(in)
			c.(*net.TCPConn).CloseWrite()
			io.ReadAll(c) // the server's flight, if any, to its close
			if err := h.reason(t); !errors.Is(err, ErrTLSHandshake) || !errors.Is(err, want[name]) {
				t.Errorf("after %s: OnClose %v; want a TLS handshake error wrapping %v (crypto/tls's)", name, err, want[name])
			}
		}
	})
}

// cryptoTLSHandshakeAfter is the error of crypto/tls's server handshake (tlsServerConfig)
// with a client that sends in and shuts its writing side.
func cryptoTLSHandshakeAfter(t *testing.T, in []byte) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := tlsServerConfig(t)
	errc := make(chan error, 1)
	go func() {
		sc, err := ln.Accept()
		if err == nil {
			sc.SetDeadline(time.Now().Add(waitFor))
			err = tls.Server(sc, cfg).Handshake()
			sc.Close()
		}
		errc <- err
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), waitFor)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitFor))
	c.Write(in)
	c.(*net.TCPConn).CloseWrite()
	io.ReadAll(c)
	return <-errc
}

// TestTLSPendingCountsWhatIsSent: a TLS connection's Pending counts the plaintext written and
// the records it becomes, and is back at 0 once they are sent, as is the engine's count of
// buffered bytes.
func TestTLSPendingCountsWhatIsSent(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(c *Conn, line string) {
			c.Write(bytes.Repeat([]byte("x"), 100<<10))
			c.WriteString("\n")
		}
		e := tlsEngine(t, s, r)
		c := dialTLS(t, e, nil)
		sc := r.next(t)
		c.Write([]byte("go\n"))
		readN(t, c, 100<<10+1)
		eventually(t, "Pending back at 0", func() bool {
			n := -1
			onLoop(t, sc.Loop(), func() { n = sc.Pending() })
			return n == 0
		})
		eventually(t, "the engine's buffered bytes back at 0", func() bool { return e.Buffered() == 0 })
	})
}

// TestTLSDialTalksToTLSServers: DialTLS's connection talks plaintext to its handler over TLS, to
// crypto/tls's own server and to an engine's WithTLS; Conn.TLS gives the state once the
// handshake has ended, with the server's certificate verified against the config's roots.
func TestTLSDialTalksToTLSServers(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		ln := echoTLSPeer(t, "tcp", "127.0.0.1:0")
		srv := tlsEngine(t, s, Echo{})
		e := startDialEngine(t, s.opts()...)
		for _, addr := range []string{ln.Addr().String(), srv.Addr().String()} {
			r := newRecorder()
			states := make(chan *tls.ConnectionState, 1)
			r.line = func(c *Conn, line string) { states <- c.TLS() }
			c, err := e.DialTLS(context.Background(), "tcp", addr, tlsClientConfig(t), r)
			if err != nil {
				t.Fatalf("DialTLS %s: %v", addr, err)
			}
			c.WriteString("ping\n") // before the handshake's end: sent after it
			select {
			case st := <-states:
				if st == nil || !st.HandshakeComplete || len(st.PeerCertificates) == 0 {
					t.Fatalf("%s: Conn.TLS() = %+v; want the handshake's state", addr, st)
				}
			case <-time.After(waitFor):
				t.Fatalf("%s: no echo within %v (events %q)", addr, waitFor, r.log())
			}
			c.Close()
			if _, err := r.closedWith(t); err != nil {
				t.Fatalf("%s: OnClose: %v", addr, err)
			}
		}
	})
}

// TestTLSDialUntrustedServerClosesNamingIt: a DialTLS connection to a server whose certificate
// its config does not trust is closed, with an error naming the handshake and wrapping
// crypto/x509's.
func TestTLSDialUntrustedServerClosesNamingIt(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		srv := tlsEngine(t, s, Echo{})
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		if _, err := e.DialTLS(context.Background(), "tcp", srv.Addr().String(), &tls.Config{}, r); err != nil {
			t.Fatalf("DialTLS: %v", err)
		}
		_, err := r.closedWith(t)
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "TLS handshake") {
			t.Fatalf("OnClose: %v; want a TLS handshake error wrapping x509.UnknownAuthorityError", err)
		}
	})
}

// TestTLSDialUnixNeedsServerName: DialTLS over a Unix socket with a config that names no server
// (and verifies) is refused at once, with an error that says the config needs a ServerName: a
// socket path is no name to verify a certificate against, nor to send as SNI.
func TestTLSDialUnixNeedsServerName(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "tls.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		path := ln.Addr().String()
		e := startDialEngine(t, s.opts()...)
		cfg := tlsClientConfig(t)
		cfg.ServerName = ""
		if c, err := e.DialTLS(context.Background(), "unix", path, cfg, newRecorder()); c != nil || err == nil || !strings.Contains(err.Error(), "ServerName") {
			t.Fatalf("Engine.DialTLS unix without a ServerName = %v, %v; want an error naming ServerName", c, err)
		}
		onLoop(t, e.Loops()[0], func() {
			err = e.Loops()[0].DialTLS(context.Background(), "unix", path, cfg, newRecorder(), func(*Conn, error) {})
		})
		if err == nil || !strings.Contains(err.Error(), "ServerName") {
			t.Fatalf("Loop.DialTLS unix without a ServerName = %v; want an error naming ServerName", err)
		}
	})
}

// TestTLSDialUnixVerifiesTheConfigsServerName: DialTLS over a Unix socket with a ServerName
// talks TLS to the server there, its certificate verified against that name.
func TestTLSDialUnixVerifiesTheConfigsServerName(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		ln := echoTLSPeer(t, "unix", filepath.Join(t.TempDir(), "tls.sock"))
		e := startDialEngine(t, s.opts()...)
		r := newRecorder()
		states := make(chan *tls.ConnectionState, 1)
		r.line = func(c *Conn, line string) { states <- c.TLS() }
		cfg := tlsClientConfig(t)
		cfg.ServerName = "localhost"
		c, err := e.DialTLS(context.Background(), "unix", ln.Addr().String(), cfg, r)
		if err != nil {
			t.Fatalf("DialTLS: %v", err)
		}
		c.WriteString("ping\n")
		select {
		case st := <-states:
			if st == nil || st.ServerName != "localhost" || len(st.VerifiedChains) == 0 {
				t.Fatalf("Conn.TLS() = %+v; want a handshake verified for localhost", st)
			}
		case <-time.After(waitFor):
			t.Fatalf("no echo within %v (events %q)", waitFor, r.log())
		}
		c.Close()
		if _, err := r.closedWith(t); err != nil {
			t.Fatalf("OnClose: %v", err)
		}
	})
}

// handshakeRecorder is a recorder told of each handshake's end: what Conn.TLS gave in OnOpen and
// in OnHandshake; OnHandshake writes the ALPN protocol chosen, if any, as a greeting.
type handshakeRecorder struct {
	*recorder
	atOpen, atHandshake chan *tls.ConnectionState
}

func newHandshakeRecorder() *handshakeRecorder {
	return &handshakeRecorder{recorder: newRecorder(), atOpen: make(chan *tls.ConnectionState, 10), atHandshake: make(chan *tls.ConnectionState, 10)}
}

func (h *handshakeRecorder) OnOpen(c *Conn) {
	h.atOpen <- c.TLS()
	h.recorder.OnOpen(c)
}

func (h *handshakeRecorder) OnHandshake(c *Conn) {
	st := c.TLS()
	h.atHandshake <- st
	h.mu.Lock()
	h.events = append(h.events, "handshake")
	h.mu.Unlock()
	if st != nil && st.NegotiatedProtocol != "" {
		c.WriteString("alpn " + st.NegotiatedProtocol + "\n")
	}
}

// TestTLSOnHandshakeGivesStateBeforeFirstData: OnOpen sees no TLS state (it runs before the
// handshake); OnHandshake sees the handshake's (ALPN included), before the first OnData, and
// what it writes is the first thing the client reads.
func TestTLSOnHandshakeGivesStateBeforeFirstData(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newHandshakeRecorder()
		cfg := tlsServerConfig(t)
		cfg.NextProtos = []string{"ringev-test"}
		e := startEngine(t, h, append(s.opts(), WithTLS(cfg))...)
		ccfg := tlsClientConfig(t)
		ccfg.NextProtos = []string{"ringev-test"}
		c := dialTLS(t, e, ccfg)
		c.Write([]byte("hi\n"))
		if got := readN(t, c, len("alpn ringev-test\nhi\n")); got != "alpn ringev-test\nhi\n" {
			t.Fatalf("read %q; want OnHandshake's greeting, then the echo", got)
		}
		if st := <-h.atOpen; st != nil {
			t.Fatalf("Conn.TLS() in OnOpen = %+v; want nil (before the handshake)", st)
		}
		select {
		case st := <-h.atHandshake:
			if st == nil || !st.HandshakeComplete || st.NegotiatedProtocol != "ringev-test" {
				t.Fatalf("Conn.TLS() in OnHandshake = %+v; want the handshake's state", st)
			}
		default:
			t.Fatal("OnHandshake was not called")
		}
		if ev := h.log(); len(ev) < 3 || ev[0] != "open" || ev[1] != "handshake" || ev[2] != "data hi" {
			t.Fatalf("events %q; want open, handshake, data hi", ev)
		}
	})
}

// TestTLSOnHandshakeNotCalledWhenHandshakeFails: a handshake that fails closes the connection
// (OnClose names it) without OnHandshake.
func TestTLSOnHandshakeNotCalledWhenHandshakeFails(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newHandshakeRecorder()
		sendGarbageHello(t, tlsEngine(t, s, h))
		if _, err := h.closedWith(t); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
			t.Fatalf("OnClose: %v; want a TLS handshake error", err)
		}
		if ev := h.log(); slices.Contains(ev, "handshake") {
			t.Fatalf("events %q: OnHandshake called for a failed handshake", ev)
		}
	})
}

// TestTLSOnHandshakeRunsOnDialedConns: a DialTLS connection's handler is told of the
// handshake's end, with the server's certificates in Conn.TLS.
func TestTLSOnHandshakeRunsOnDialedConns(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		srv := tlsEngine(t, s, Echo{})
		e := startDialEngine(t, s.opts()...)
		h := newHandshakeRecorder()
		c, err := e.DialTLS(context.Background(), "tcp", srv.Addr().String(), tlsClientConfig(t), h)
		if err != nil {
			t.Fatalf("DialTLS: %v", err)
		}
		select {
		case st := <-h.atHandshake:
			if st == nil || !st.HandshakeComplete || len(st.PeerCertificates) == 0 {
				t.Fatalf("Conn.TLS() in OnHandshake = %+v; want the server's certificates", st)
			}
		case <-time.After(waitFor):
			t.Fatalf("OnHandshake not called within %v (events %q)", waitFor, h.log())
		}
		c.Close()
		if _, err := h.closedWith(t); err != nil {
			t.Fatalf("OnClose: %v", err)
		}
	})
}

// TestTLSTransportReadStopsAtRecordEnd: once the handshake has ended, the transport hands
// crypto/tls at most the rest of the record it reads, however the bytes arrived (a header cut
// in two, two records in one receive), so crypto/tls's input buffer never holds a second record.
func TestTLSTransportReadStopsAtRecordEnd(t *testing.T) {
	rec := func(body string) []byte {
		return append([]byte{23, 3, 3, byte(len(body) >> 8), byte(len(body))}, body...)
	}
	stream := slices.Concat(rec("first"), rec(""), rec("second record"), rec("x"))
	want := [][]byte{rec("first"), rec(""), rec("second record"), rec("x")}
	for cut := range len(stream) + 1 { // every place a receive may end
		tr := &tlsTransport{}
		var got [][]byte
		var cur []byte
		for _, part := range [][]byte{stream[:cut], stream[cut:]} {
			tr.in = part
			for {
				p := make([]byte, 64)
				n, err := tr.Read(p)
				if err != nil {
					if err != errWouldBlock {
						t.Fatalf("cut %d: Read: %v", cut, err)
					}
					break
				}
				cur = append(cur, p[:n]...)
				if len(cur) >= 5 && len(cur) == 5+int(cur[3])<<8+int(cur[4]) {
					got = append(got, cur)
					cur = nil
				} else if len(cur) >= 5 && len(cur) > 5+int(cur[3])<<8+int(cur[4]) {
					t.Fatalf("cut %d: a Read went past the record's end: %q", cut, cur)
				}
			}
		}
		if len(cur) != 0 || !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("cut %d: records %q, rest %q; want %q", cut, got, cur, want)
		}
	}
}

// openRecorder is Echo that hands over each connection it opens.
type openRecorder struct {
	Echo
	opened chan *Conn
}

func (o openRecorder) OnOpen(c *Conn) { o.opened <- c }

// TestTLSIdleConnHoldsNoLayerBuffer: once an exchange is over, a TLS connection holds no buffer
// of the layer's (no plaintext, no record in part, no input, no output), nor the handshake's
// tls.Conn and transport: what it keeps idle is its record layer's secrets and sequence numbers.
func TestTLSIdleConnHoldsNoLayerBuffer(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		o := openRecorder{opened: make(chan *Conn, 1)}
		e := tlsEngine(t, s, o)
		c := dialTLS(t, e, nil)
		msg := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB: records of every size
		go c.Write(msg)
		if got := readN(t, c, len(msg)); got != string(msg) {
			t.Fatalf("echo of %d bytes came back different", len(msg))
		}
		sc := received(t, o.opened, "OnOpen")
		var held string
		for end := time.Now().Add(waitFor); ; {
			done := make(chan string, 1)
			if err := sc.l.Post(func() {
				tc := sc.tlsOf()
				var h []string
				if tc.tr != nil || tc.tc != nil {
					h = append(h, "the handshake's tls.Conn and transport")
				}
				var part []byte
				if sw, ok := tc.rec.(*swRecords); ok {
					part = sw.part
				}
				for _, b := range []struct {
					name string
					buf  []byte
				}{{"plain", tc.plain}, {"a record in part", part}, {"input", sc.inBytes()}, {"output", sc.pend}} {
					if b.buf != nil {
						h = append(h, fmt.Sprintf("%s (cap %d)", b.name, cap(b.buf)))
					}
				}
				done <- strings.Join(h, ", ")
			}); err != nil {
				t.Fatalf("Post: %v", err)
			}
			if held = <-done; held == "" {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("idle TLS connection holds %s", held)
			}
			runtime.Gosched()
		}
	})
}

// TestTLSHandshakeCallbacksSeeTheAddresses: the tls.Config callbacks that run in the handshake
// (GetConfigForClient here; GetCertificate and VerifyConnection alike) get the connection's
// local and remote addresses from ClientHelloInfo.Conn, as over a net.Conn: servers choose a
// certificate or limit clients by them.
func TestTLSHandshakeCallbacksSeeTheAddresses(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		addrs := make(chan [2]net.Addr, 1)
		cfg := tlsServerConfig(t)
		cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			addrs <- [2]net.Addr{hello.Conn.LocalAddr(), hello.Conn.RemoteAddr()}
			return nil, nil
		}
		e := startEngine(t, Echo{}, append(s.opts(), WithTLS(cfg))...)
		raw := dialEngine(t, e)
		handshakeOver(t, raw, nil)
		got := <-addrs
		if got[0] == nil || got[1] == nil || got[0].String() != raw.RemoteAddr().String() || got[1].String() != raw.LocalAddr().String() {
			t.Fatalf("ClientHelloInfo.Conn: local %v, remote %v; want %v, %v", got[0], got[1], raw.RemoteAddr(), raw.LocalAddr())
		}
	})
}

// TestTLSDataAndFINAfterHandshakeAreServed: a client that writes right after its handshake
// and then shuts down its side (close_notify, then its FIN) gets its echo before the EOF: the
// bytes and the FIN may reach the loop while the handshake's goroutine has yet to read the
// client's Finished, and they wait for it.
func TestTLSDataAndFINAfterHandshakeAreServed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		e := tlsEngine(t, s, h)
		for i := range 20 {
			raw := dialEngine(t, e)
			c := handshakeOver(t, raw, nil)
			msg := fmt.Sprintf("hello %d\n", i)
			if _, err := c.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			raw.(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(c)
			if string(got) != msg {
				t.Fatalf("connection %d: the client read %q, %v; want %q, then EOF (OnClose: %v)", i, got, err, msg, h.reason(t))
			}
			h.reason(t)
		}
	})
}

// greetCloser writes a greeting in OnOpen and closes the connection there.
type greetCloser struct{ Echo }

func (greetCloser) OnOpen(c *Conn) {
	c.WriteString("busy, bye\n")
	c.Close()
}

// TestTLSCloseInOnOpenSendsTheGreeting: a handler that writes in OnOpen and closes there (a
// server that turns a client away with a message) has its bytes sent once the handshake has
// ended, then close_notify and EOF, as Close promises and as over TCP.
func TestTLSCloseInOnOpenSendsTheGreeting(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, greetCloser{})
		c := dialTLS(t, e, nil)
		got, err := io.ReadAll(c)
		if string(got) != "busy, bye\n" || err != nil {
			t.Fatalf("the client read %q, %v; want \"busy, bye\\n\" then EOF", got, err)
		}
	})
}

// shutWriter shuts down its writing side in OnOpen and records the lines it gets.
type shutWriter struct{ *recorder }

func (h shutWriter) OnOpen(c *Conn) {
	h.recorder.OnOpen(c)
	c.CloseWrite()
}

// TestTLSCloseWriteBeforeHandshakeEndsWaitsForIt: CloseWrite in OnOpen, before the handshake,
// shuts the writing side down after the handshake and close_notify, not in the middle of the
// handshake: the client's handshake succeeds, it reads EOF, and what it sends still arrives.
func TestTLSCloseWriteBeforeHandshakeEndsWaitsForIt(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.line = func(*Conn, string) {}
		e := tlsEngine(t, s, shutWriter{r}, WithHalfOpen(true))
		c := dialTLS(t, e, nil)
		if got, err := io.ReadAll(c); len(got) != 0 || err != nil {
			t.Fatalf("the client read %q, %v; want EOF (close_notify)", got, err)
		}
		if _, err := c.Write([]byte("still heard\n")); err != nil {
			t.Fatalf("writing after the server's CloseWrite: %v", err)
		}
		for end := time.Now().Add(waitFor); !slices.Contains(r.log(), "data still heard"); {
			if time.Now().After(end) {
				t.Fatalf("events %q: the server did not get the line sent after its CloseWrite", r.log())
			}
			time.Sleep(time.Millisecond) // the pace of the polling
		}
	})
}

// TestTLSBackpressureEndIsToldAfterEveryPassSeen: over TLS too, a goroutine that writes to a
// connection and then sees Pending past WriteLimit is told when the output has drained, each
// time (the sealing of the plaintext into records makes no peak of Pending that no send would
// find, and the handshake's end is not held up by the output waiting for it).
func TestTLSBackpressureEndIsToldAfterEveryPassSeen(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		w := &drainWatcher{recorder: newRecorder()}
		e := startEngine(t, w, append(s.opts(), WithWriteLimit(passLimit), WithTLS(tlsServerConfig(t)))...)
		c := dialTLS(t, e, nil)
		drainToldAfterEveryPass(t, w, c, w.next(t))
	})
}

// TestTLSGreetingPastTheWriteLimitLetsTheHandshakeEnd: a greeting that OnOpen writes past the
// write limit waits for the handshake, which still reads the client's flight: the client gets
// the greeting whole (the output waiting for the handshake does not stop its reading).
func TestTLSGreetingPastTheWriteLimitLetsTheHandshakeEnd(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		r.greet = strings.Repeat("g", 4*passLimit)
		e := startEngine(t, r, append(s.opts(), WithWriteLimit(passLimit), WithTLS(tlsServerConfig(t)))...)
		c := dialTLS(t, e, nil)
		if got := readN(t, c, len(r.greet)); got != r.greet {
			t.Fatal("the greeting came back altered")
		}
	})
}

// TestTLSRecordsReceivedTogetherMakeOneOnData: records that arrive in one segment (50 lines, a
// record each, sent by one write(2)) reach the handler in one OnData with all their plaintext,
// as a plain connection's bytes do, not one OnData per record.
func TestTLSRecordsReceivedTogetherMakeOneOnData(t *testing.T) {
	const lines = 50
	eachSetup(t, func(t *testing.T, s setup) {
		h := &dataCalls{}
		e := tlsEngine(t, s, h)
		raw := &heldConn{Conn: dialEngine(t, e)}
		c := handshakeOver(t, raw, nil)
		c.SetDeadline(time.Now().Add(waitFor))
		raw.hold.Store(true)
		var want strings.Builder
		for i := range lines {
			line := fmt.Sprintf("line %d\n", i)
			want.WriteString(line)
			if _, err := c.Write([]byte(line)); err != nil {
				t.Fatalf("tls.Conn.Write: %v", err)
			}
		}
		if err := raw.release(); err != nil {
			t.Fatalf("writing the %d records at once: %v", lines, err)
		}
		eventually(t, "every line received", func() bool { return h.got() == want.Len() })
		if calls, data := h.result(); calls != 1 || data != want.String() {
			t.Fatalf("%d records sent together made %d OnData calls (%q), want one with all of them", lines, calls, data)
		}
	})
}

// dataCalls is a handler that counts its OnData calls and keeps the input they were given.
type dataCalls struct {
	mu    sync.Mutex
	calls int
	data  []byte
}

func (h *dataCalls) OnData(c *Conn) {
	in, _ := c.Peek(-1)
	h.mu.Lock()
	h.calls++
	h.data = append(h.data, in...)
	h.mu.Unlock()
	c.Discard(len(in))
}

func (h *dataCalls) got() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.data)
}

func (h *dataCalls) result() (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls, string(h.data)
}

// heldConn is a client's socket under its tls.Conn whose writes, while hold is set, are kept
// and then sent by release in one write(2).
type heldConn struct {
	net.Conn
	hold atomic.Bool
	kept []byte // the writes held (only the test's goroutine writes)
}

func (r *heldConn) Write(b []byte) (int, error) {
	if r.hold.Load() {
		r.kept = append(r.kept, b...)
		return len(b), nil
	}
	return r.Conn.Write(b)
}

// release ends the hold and sends what it kept in one write.
func (r *heldConn) release() error {
	r.hold.Store(false)
	_, err := r.Conn.Write(r.kept)
	return err
}
