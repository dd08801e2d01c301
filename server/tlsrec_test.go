//go:build linux

package server

// Tests of the loop's own TLS 1.3 record layer (swRecords): a client that writes and reads
// records by hand (recordPeer) after Go's client has made the handshake.

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	gohash "hash"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/crypto/chacha20poly1305"
)

// keyLogLines keeps a client's key log.
type keyLogLines struct{ testutil.SyncBuffer }

// secret is the logged secret of label, nil if none.
func (k *keyLogLines) secret(label string) []byte {
	for _, line := range strings.Split(k.String(), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == label {
			b, _ := hex.DecodeString(f[2])
			return b
		}
	}
	return nil
}

// oneRecord is a socket whose Read returns at most the rest of one record, so that the
// client's tls.Conn reads nothing past its handshake: what follows is the recordPeer's.
type oneRecord struct {
	net.Conn
	cut recordCut
}

func (o *oneRecord) Read(p []byte) (int, error) {
	hdr := o.cut.hn < len(o.cut.hdr)
	if hdr {
		p = p[:min(len(p), len(o.cut.hdr)-o.cut.hn)]
	} else {
		p = p[:min(len(p), o.cut.left)]
	}
	n, err := o.Conn.Read(p)
	o.cut.take(p[:n], n)
	return n, err
}

// peerDir is one direction of the recordPeer: the RFC 8446 derivations written apart from
// the layer's (only HKDF-Expand-Label is shared).
type peerDir struct {
	h      func() gohash.Hash
	suite  uint16
	secret []byte
	aead   cipher.AEAD
	iv     []byte
	seq    uint64
}

func (d *peerDir) set(t *testing.T, secret []byte) {
	t.Helper()
	d.secret = secret
	klen := 16
	if d.suite != tls.TLS_AES_128_GCM_SHA256 {
		klen = 32
	}
	key, err := expandLabel(d.h, secret, "key", klen)
	if err != nil {
		t.Fatal(err)
	}
	if d.iv, err = expandLabel(d.h, secret, "iv", 12); err != nil {
		t.Fatal(err)
	}
	if d.suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		d.aead, err = chacha20poly1305.New(key)
	} else {
		b, _ := aes.NewCipher(key)
		d.aead, err = cipher.NewGCM(b)
	}
	if err != nil {
		t.Fatal(err)
	}
	d.seq = 0
}

func (d *peerDir) update(t *testing.T) {
	t.Helper()
	next, err := expandLabel(d.h, d.secret, "traffic upd", d.h().Size())
	if err != nil {
		t.Fatal(err)
	}
	d.set(t, next)
}

func (d *peerDir) nonce() []byte {
	n := bytes.Clone(d.iv)
	for i := range 8 {
		n[11-i] ^= byte(d.seq >> (8 * i))
	}
	return n
}

// recordPeer is a TLS 1.3 client that Go's client handshakes for, then writes and reads
// records by hand with the traffic secrets from its key log.
type recordPeer struct {
	t        *testing.T
	conn     net.Conn
	out, in  peerDir
	pending  []byte // application data read and not yet taken
	st       tls.ConnectionState
	clientTC *tls.Conn
}

func newRecordPeer(t *testing.T, e *Engine, cfg *tls.Config) *recordPeer {
	t.Helper()
	raw := dialEngine(t, e)
	if cfg == nil {
		cfg = tlsClientConfig(t)
	}
	kl := &keyLogLines{}
	cfg.KeyLogWriter = kl
	cfg.MinVersion = tls.VersionTLS13
	tc := tls.Client(&oneRecord{Conn: raw}, cfg)
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	st := tc.ConnectionState()
	h := sha256.New
	if st.CipherSuite == tls.TLS_AES_256_GCM_SHA384 {
		h = sha512.New384
	}
	p := &recordPeer{t: t, conn: raw, st: st, clientTC: tc}
	p.out = peerDir{h: h, suite: st.CipherSuite}
	p.in = peerDir{h: h, suite: st.CipherSuite}
	p.out.set(t, kl.secret("CLIENT_TRAFFIC_SECRET_0"))
	p.in.set(t, kl.secret("SERVER_TRAFFIC_SECRET_0"))
	return p
}

// record is a record of inner type typ with content and pad zeros, sealed under the send key.
func (p *recordPeer) record(typ byte, content []byte, pad int) []byte {
	inner := append(append(bytes.Clone(content), typ), make([]byte, pad)...)
	n := len(inner) + p.out.aead.Overhead()
	hdr := []byte{recAppData, 3, 3, byte(n >> 8), byte(n)}
	rec := p.out.aead.Seal(hdr, p.out.nonce(), inner, hdr)
	p.out.seq++
	return rec
}

func (p *recordPeer) send(recs ...[]byte) {
	p.t.Helper()
	p.conn.SetWriteDeadline(time.Now().Add(waitFor))
	if _, err := p.conn.Write(bytes.Join(recs, nil)); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// next reads and opens the server's next record: its inner type and content.
func (p *recordPeer) next() (byte, []byte, error) {
	p.conn.SetReadDeadline(time.Now().Add(waitFor))
	hdr := make([]byte, recHeader)
	if _, err := io.ReadFull(p.conn, hdr); err != nil {
		return 0, nil, err
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(p.conn, body); err != nil {
		return 0, nil, err
	}
	if hdr[0] != recAppData {
		return 0, nil, fmt.Errorf("a record of outer type %d", hdr[0])
	}
	pt, err := p.in.aead.Open(nil, p.in.nonce(), body, hdr)
	if err != nil {
		return 0, nil, fmt.Errorf("server record %d does not open: %w", p.in.seq, err)
	}
	p.in.seq++
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		return 0, nil, errors.New("a server record without a content type")
	}
	return pt[i], pt[:i], nil
}

// read returns the next n bytes of application data, skipping the NewSessionTickets.
func (p *recordPeer) read(n int) string {
	p.t.Helper()
	for len(p.pending) < n {
		typ, b, err := p.next()
		if err != nil {
			p.t.Fatalf("reading %d bytes (%q so far): %v", n, p.pending, err)
		}
		switch {
		case typ == recAppData:
			p.pending = append(p.pending, b...)
		case typ == recHandshake && len(b) > 0 && b[0] == 4: // NewSessionTicket
		default:
			p.t.Fatalf("reading data: a record of type %d: %x", typ, b)
		}
	}
	s := string(p.pending[:n])
	p.pending = p.pending[n:]
	return s
}

// closeNotifyThenEOF reads the server's close_notify, then the end of the stream; when says
// what came before, for the failure.
func (p *recordPeer) closeNotifyThenEOF(when string) {
	p.t.Helper()
	if typ, b, err := p.next(); err != nil || typ != recAlert || !bytes.Equal(b, []byte{1, alertCloseNotify}) {
		p.t.Fatalf("%s: type %d %x, %v; want the server's close_notify", when, typ, b, err)
	}
	if typ, b, err := p.next(); err != io.EOF {
		p.t.Fatalf("after the server's close_notify: type %d %x, %v; want EOF", typ, b, err)
	}
}

// alert reads until the server's alert and returns its description, then expects the close.
func (p *recordPeer) alert() uint8 {
	p.t.Helper()
	for {
		typ, b, err := p.next()
		if err != nil {
			p.t.Fatalf("waiting for an alert: %v", err)
		}
		if typ == recAlert && len(b) == 2 {
			if _, err := p.conn.Read(make([]byte, 1)); err == nil {
				p.t.Fatalf("the connection is open after alert %d", b[1])
			}
			return b[1]
		}
	}
}

// pingedPeer serves an echo over TLS on s and returns a recordPeer talking to it, after a first
// "ping" echoed.
func pingedPeer(t *testing.T, s setup, h Handler) *recordPeer {
	t.Helper()
	e := tlsEngine(t, s, h)
	p := newRecordPeer(t, e, nil)
	p.send(p.record(recAppData, []byte("ping"), 0))
	if got := p.read(4); got != "ping" {
		t.Fatalf("echo: %q", got)
	}
	return p
}

// layerRecorder tells which record layer each connection has when its first data arrives.
type layerRecorder struct {
	Echo
	layers chan string
}

func (h *layerRecorder) OnData(c *Conn) {
	t := c.tlsOf()
	var layer string
	switch r := t.rec.(type) {
	case *swRecords:
		layer = fmt.Sprintf("swRecords seq %d", r.out.seq)
		if t.tc != nil {
			layer = "swRecords with the tls.Conn kept"
		}
	case *goRecords:
		layer = "goRecords"
	}
	select {
	case h.layers <- layer: // the first data's
	default:
	}
	h.Echo.OnData(c)
}

// TestTLSRecordsServeTLS13AfterTheHandshake: a TLS 1.3 connection's records are the layer's
// own once the handshake has ended, and its tls.Conn is gone; each suite's echo works, the
// send sequence going on after the session tickets the handshake sent (none when tickets are
// off; after the client's Finished when a client certificate is asked for).
func TestTLSRecordsServeTLS13AfterTheHandshake(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		for _, v := range []struct {
			name    string
			config  func(*tls.Config)
			tickets int // the NewSessionTicket records the handshake sends
		}{
			{"tickets", func(*tls.Config) {}, 1},
			{"no-tickets", func(c *tls.Config) { c.SessionTicketsDisabled = true }, 0},
			{"client-cert-asked", func(c *tls.Config) { c.ClientAuth = tls.RequestClientCert }, 1},
			// P-384 alone: Go's client sends no key share for it, so the server asks for one
			// (HelloRetryRequest) and the client's second ClientHello has the first's random.
			{"hello-retry", func(c *tls.Config) { c.CurvePreferences = []tls.CurveID{tls.CurveP384} }, 1},
		} {
			h := &layerRecorder{layers: make(chan string, 1)}
			cfg := tlsServerConfig(t)
			v.config(cfg)
			e := startEngine(t, h, append(s.opts(), WithTLS(cfg))...)
			ccfg := tlsClientConfig(t)
			ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(1) // Go's client asks for tickets only with a cache
			c := dialTLS(t, e, ccfg)
			for _, msg := range []string{"hello", strings.Repeat("x", 40000)} {
				c.Write([]byte(msg))
				if got := readN(t, c, len(msg)); got != msg {
					t.Fatalf("%s: echo of %d bytes: %d bytes back", v.name, len(msg), len(got))
				}
			}
			if got, want := received(t, h.layers, "the record layer"), fmt.Sprintf("swRecords seq %d", v.tickets); got != want {
				t.Errorf("%s: at the first data, the record layer is %s; want %s (after the tickets' records)", v.name, got, want)
			}
			e.tls.keyMu.Lock()
			if n := len(e.tls.keys); n != 0 {
				t.Errorf("%s: %d handshakes still registered for the key log after the handshake", v.name, n)
			}
			e.tls.keyMu.Unlock()
			c.Close()
		}
	})
}

// TestTLSRecordsLeaveTLS12ToCryptoTLS: a TLS 1.2 connection keeps crypto/tls's record layer,
// and is served.
func TestTLSRecordsLeaveTLS12ToCryptoTLS(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := &layerRecorder{layers: make(chan string, 1)}
		e := tlsEngine(t, s, h)
		cfg := tlsClientConfig(t)
		cfg.MaxVersion = tls.VersionTLS12
		c := dialTLS(t, e, cfg)
		c.Write([]byte("hello"))
		if got := readN(t, c, 5); got != "hello" {
			t.Fatalf("echo: %q", got)
		}
		if got := received(t, h.layers, "the record layer"); got != "goRecords" {
			t.Errorf("TLS 1.2: the record layer is %s; want goRecords", got)
		}
	})
}

// TestTLSRecordsPeerKeyUpdateMovesTheReceiveKey: a KeyUpdate from the client
// (update_not_requested) moves the server's receive key: the record after it, under the
// client's next key, is opened; the server's key stays.
func TestTLSRecordsPeerKeyUpdateMovesTheReceiveKey(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) { peerKeyUpdate(t, s, false) })
}

// TestTLSRecordsPeerKeyUpdateRequestedGetsOurs: a KeyUpdate with update_requested gets the
// server's KeyUpdate (update_not_requested), and the server's next records are under its next
// key.
func TestTLSRecordsPeerKeyUpdateRequestedGetsOurs(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) { peerKeyUpdate(t, s, true) })
}

// peerKeyUpdate sends a KeyUpdate (update_requested or not), then a record under the client's
// next key, and checks the echo (after the server's KeyUpdate, when requested).
func peerKeyUpdate(t *testing.T, s setup, requested bool) {
	p := pingedPeer(t, s, Echo{})
	req := byte(0)
	if requested {
		req = 1
	}
	p.send(p.record(recHandshake, []byte{hsKeyUpdate, 0, 0, 1, req}, 0))
	p.out.update(t)
	p.send(p.record(recAppData, []byte("pong"), 0))
	if requested {
		typ, b, err := p.next()
		if err != nil || typ != recHandshake || !bytes.Equal(b, []byte{hsKeyUpdate, 0, 0, 1, 0}) {
			t.Fatalf("after KeyUpdate(update_requested): type %d %x, %v; want the server's KeyUpdate(update_not_requested)", typ, b, err)
		}
		p.in.update(t)
	}
	if got := p.read(4); got != "pong" {
		t.Fatalf("echo after KeyUpdate(%d): %q", req, got)
	}
}

// TestTLSRecordsAlertUnexpectedMessages: after the handshake, a handshake message other than
// KeyUpdate, a record without a content type, and a KeyUpdate with data after it in its record
// each get the unexpected_message alert and a close naming the record error.
func TestTLSRecordsAlertUnexpectedMessages(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		for _, v := range []struct {
			name string
			rec  func(p *recordPeer) []byte
		}{
			{"new-session-ticket", func(p *recordPeer) []byte { return p.record(recHandshake, []byte{4, 0, 0, 1, 0}, 0) }},
			{"no-content-type", func(p *recordPeer) []byte { return p.record(0, nil, 20) }},
			{"key-update-with-more", func(p *recordPeer) []byte {
				return p.record(recHandshake, []byte{hsKeyUpdate, 0, 0, 1, 0, hsKeyUpdate}, 0)
			}},
			{"change-cipher-spec", func(p *recordPeer) []byte { return p.record(20, []byte{1}, 0) }},
		} {
			h := newEchoCloser()
			p := pingedPeer(t, s, h)
			p.send(v.rec(p))
			if got := p.alert(); got != alertUnexpectedMessage {
				t.Errorf("%s: alert %v; want unexpected_message", v.name, tls.AlertError(got))
			}
			if err := h.reason(t); err == nil || !strings.Contains(err.Error(), "TLS record") {
				t.Errorf("%s: OnClose: %v; want a TLS record error", v.name, err)
			}
		}
	})
}

// TestTLSRecordsStripPadding: a record's padding goes, its content type is the last nonzero
// byte, and data split over records and receives comes whole.
func TestTLSRecordsStripPadding(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := pingedPeer(t, s, Echo{})
		rec := p.record(recAppData, []byte("padded"), 300)
		p.send(rec[:3])
		p.send(rec[3:], p.record(recAppData, []byte{0, 0}, 7))
		if got := p.read(8); got != "padded\x00\x00" {
			t.Fatalf("echo: %q; want %q", got, "padded\x00\x00")
		}
	})
}

// TestTLSRecordsOverflowingPlaintextAlerts: a record whose plaintext is over 2^14 bytes (its
// ciphertext within the limit) gets record_overflow.
func TestTLSRecordsOverflowingPlaintextAlerts(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := pingedPeer(t, s, Echo{})
		p.send(p.record(recAppData, make([]byte, maxPlaintext+1), 0))
		if got := p.alert(); got != alertRecordOverflow {
			t.Errorf("alert %v; want record_overflow", tls.AlertError(got))
		}
	})
}

// TestTLSRecordsBoundEmptyRecords: 16 empty records in a row are taken; 17 get
// unexpected_message, as crypto/tls bounds them.
func TestTLSRecordsBoundEmptyRecords(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := pingedPeer(t, s, Echo{})
		var recs [][]byte
		for range maxUseless {
			recs = append(recs, p.record(recAppData, nil, 0))
		}
		p.send(append(recs, p.record(recAppData, []byte("ok"), 0))...)
		if got := p.read(2); got != "ok" {
			t.Fatalf("after %d empty records: %q", maxUseless, got)
		}
		recs = recs[:0]
		for range maxUseless + 1 {
			recs = append(recs, p.record(recAppData, nil, 0))
		}
		p.send(recs...)
		if got := p.alert(); got != alertUnexpectedMessage {
			t.Errorf("after %d empty records: alert %v; want unexpected_message", maxUseless+1, tls.AlertError(got))
		}
	})
}

// TestTLSRecordsCloseNotifyIsEOF: the client's close_notify is the end of its data (OnClose:
// io.EOF, not ErrTLSNoCloseNotify), as crypto/tls's records make it.
func TestTLSRecordsCloseNotifyIsEOF(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		p := pingedPeer(t, s, h)
		p.send(p.record(recAppData, []byte("last"), 0), p.record(recAlert, []byte{1, alertCloseNotify}, 0))
		if got := p.read(4); got != "last" {
			t.Fatalf("echo: %q", got)
		}
		if err := h.reason(t); err != io.EOF {
			t.Errorf("OnClose: %v; want io.EOF after close_notify", err)
		}
	})
}

// TestTLSRecordsCloseNotifyIsAnsweredWithOurs: a connection that closes after the client's
// close_notify sends its own first, after the replies to the data before it (RFC 8446 §6.1:
// each party sends one before it closes its writing side), then the FIN.
func TestTLSRecordsCloseNotifyIsAnsweredWithOurs(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := pingedPeer(t, s, Echo{})
		p.send(p.record(recAppData, []byte("last"), 0), p.record(recAlert, []byte{1, alertCloseNotify}, 0))
		if got := p.read(4); got != "last" {
			t.Fatalf("echo: %q", got)
		}
		p.closeNotifyThenEOF("after the client's close_notify")
	})
}

// TestTLSRecordsCloseNotifyIsAnsweredWithOursOverTLS12: crypto/tls's records (TLS 1.2) answer
// the client's close_notify with the server's too, before the FIN.
func TestTLSRecordsCloseNotifyIsAnsweredWithOursOverTLS12(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, Echo{})
		cfg := tlsClientConfig(t)
		cfg.MaxVersion = tls.VersionTLS12
		raw := dialEngine(t, e)
		c := handshakeOver(t, raw, cfg)
		c.Write([]byte("last"))
		if got := readN(t, c, 4); got != "last" {
			t.Fatalf("echo: %q", got)
		}
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		raw.SetReadDeadline(time.Now().Add(waitFor))
		rest, err := io.ReadAll(raw) // what follows, as it goes on the wire: TLS 1.2's outer type is the record's
		if err != nil || len(rest) < recHeader || rest[0] != recAlert || recLen(rest) != len(rest) {
			t.Fatalf("after the client's close_notify: %x, %v; want one alert record, then EOF", rest, err)
		}
	})
}

// TestTLSRecordsRepliesBeforeAFatalRecordErrorAreSent: the replies to the records received
// before a bad one in the same read are sent, then the alert, then the FIN: the answer does not
// depend on whether the good records came in an earlier read.
func TestTLSRecordsRepliesBeforeAFatalRecordErrorAreSent(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := pingedPeer(t, s, Echo{})
		before := p.record(recAppData, []byte("before"), 0)
		bad := p.record(recAppData, []byte("tampered"), 0)
		bad[len(bad)-1] ^= 0x55
		p.send(before, bad)
		if got := p.read(6); got != "before" {
			t.Fatalf("echo: %q", got)
		}
		if a := p.alert(); a != alertBadRecordMAC {
			t.Errorf("alert %d; want bad_record_mac (%d)", a, alertBadRecordMAC)
		}
	})
}

// TestTLSRecordsKeepConnectionState: Conn.TLS after the hand-over gives what the handshake
// chose, the server name, and exported keying material equal to the client's.
func TestTLSRecordsKeepConnectionState(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		r := newRecorder()
		got := make(chan string, 1)
		r.line = func(c *Conn, line string) {
			st := c.TLS()
			ekm, err := st.ExportKeyingMaterial("ringev test", nil, 16)
			got <- fmt.Sprintf("%x %x %s %v %x %v", st.Version, st.CipherSuite, st.ServerName, st.HandshakeComplete, ekm, err)
			c.WriteString(line + "\n")
		}
		e := startEngine(t, r, append(s.opts(), WithTLS(tlsServerConfig(t)))...)
		cfg := tlsClientConfig(t)
		cfg.ServerName = "localhost"
		c := dialTLS(t, e, cfg)
		c.Write([]byte("hi\n"))
		readN(t, c, 3)
		cs := c.ConnectionState()
		ekm, err := cs.ExportKeyingMaterial("ringev test", nil, 16)
		if want := fmt.Sprintf("%x %x localhost true %x %v", cs.Version, cs.CipherSuite, ekm, err); received(t, got, "the handler's Conn.TLS()") != want {
			t.Errorf("Conn.TLS(): want %s", want)
		}
	})
}

// TestTLSRecordsChainTheUsersKeyLog: the config's own KeyLogWriter still gets every line, and
// a GetConfigForClient's config is served by the layer too.
func TestTLSRecordsChainTheUsersKeyLog(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		kl := &keyLogLines{}
		inner := tlsServerConfig(t)
		inner.KeyLogWriter = kl
		cfg := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return inner, nil }}
		h := &layerRecorder{layers: make(chan string, 1)}
		e := startEngine(t, h, append(s.opts(), WithTLS(cfg))...)
		c := dialTLS(t, e, nil)
		c.Write([]byte("hi"))
		readN(t, c, 2)
		if got := received(t, h.layers, "the record layer"); !strings.HasPrefix(got, "swRecords seq") {
			t.Errorf("with GetConfigForClient: the record layer is %s; want swRecords", got)
		}
		for _, label := range []string{"CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0", "CLIENT_HANDSHAKE_TRAFFIC_SECRET"} {
			if kl.secret(label) == nil {
				t.Errorf("the config's KeyLogWriter has no %s", label)
			}
		}
	})
}

// TestTLSRecordsOpenSSLEachSuite: openssl s_client gets the HTTP server's answer over each
// TLS 1.3 cipher suite (Go's client picks AES-128-GCM on this hardware; the others only a
// client that asks for them gets).
func TestTLSRecordsOpenSSLEachSuite(t *testing.T) {
	openssl := needProgram(t, "openssl", "openssl")
	eachSetup(t, func(t *testing.T, s setup) {
		e := tlsEngine(t, s, NewHTTP())
		for _, suite := range []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"} {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			cmd := exec.CommandContext(ctx, openssl, "s_client", "-connect", e.Addr().String(), "-tls1_3",
				"-ciphersuites", suite, "-quiet", "-ign_eof")
			cmd.Stdin = strings.NewReader("GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			out, err := cmd.CombinedOutput()
			cancel()
			if !strings.HasSuffix(string(out), "\r\n\r\nHello, World!") {
				t.Errorf("openssl s_client -ciphersuites %s: %v\n%s", suite, err, out)
			}
		}
	})
}

// sameBytes is a reader of one byte over and over: a client's Rand that makes every
// ClientHello of it carry the same random.
type sameBytes byte

func (b sameBytes) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// goClientHello is the first record Go's client sends with cfg: its ClientHello.
func goClientHello(t *testing.T, cfg *tls.Config) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, cfg.Clone()).Handshake()
	b.SetReadDeadline(time.Now().Add(waitFor))
	rec := make([]byte, 5)
	if _, err := io.ReadFull(b, rec); err != nil {
		t.Fatalf("the ClientHello's header: %v", err)
	}
	rec = append(rec, make([]byte, int(rec[3])<<8|int(rec[4]))...)
	if _, err := io.ReadFull(b, rec[5:]); err != nil {
		t.Fatalf("the ClientHello: %v", err)
	}
	return rec
}

// TestTLSRecordsRandomRepeatedAfterItsFirstLeftIsServed: a connection whose ClientHello
// repeats the random of one under way, which then goes (reset within its handshake), is served
// when its handshake runs (the key log finds the random's entry left by the one gone), and so
// is the next connection.
func TestTLSRecordsRandomRepeatedAfterItsFirstLeftIsServed(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		// One handshake at a time: the second waits for the first's slot.
		e := tlsEngine(t, s, Echo{}, WithMaxTLSHandshakes(1))
		cfg := tlsClientConfig(t)
		cfg.Rand = sameBytes(0x42)
		var random [32]byte
		sameBytes(0x42).Read(random[:])
		entries := func() int {
			e.tls.keyMu.Lock()
			defer e.tls.keyMu.Unlock()
			return e.tls.keys[random].n
		}
		// The first: a ClientHello with the random, and nothing after it.
		hello := goClientHello(t, cfg)
		first := dialEngine(t, e)
		first.Write(hello)
		if _, err := io.ReadFull(first, make([]byte, 5)); err != nil {
			t.Fatalf("the first's ServerHello: %v", err)
		}
		// The second: Go's client with the same random, queued behind the first.
		done := make(chan error, 1)
		raw := dialEngine(t, e)
		second := tls.Client(raw, cfg.Clone())
		go func() { done <- second.Handshake() }()
		eventually(t, "the second ClientHello with the random registered", func() bool { return entries() == 2 })
		first.(*net.TCPConn).SetLinger(0)
		first.Close()
		if err := received(t, done, "the second handshake"); err != nil {
			t.Fatalf("the second handshake: %v", err)
		}
		second.Write([]byte("second"))
		if got := readN(t, second, 6); got != "second" {
			t.Fatalf("echo on the second: %q", got)
		}
		c := dialTLS(t, e, nil)
		c.Write([]byte("next"))
		if got := readN(t, c, 4); got != "next" {
			t.Fatalf("echo on the next: %q", got)
		}
	})
}

// TestTLSRecordsAEADRingKeepsBusyDirections: the loop's ring of AEADs evicts the oldest, and
// grows when a direction needs its keys again within aeadBusyMs of their eviction, so the keys
// of the connections busy at once stay however many there are (up to aeadRingMax); directions
// not used again are evicted as others are built, and one needed again later does not grow it.
func TestTLSRecordsAEADRingKeepsBusyDirections(t *testing.T) {
	l := &Loop{clockSet: true} // the loop's clock stands still unless the test moves it
	k := &recKeys{}
	use := func(d *recDir) (rebuilt bool) {
		if d.keys != nil {
			return false
		}
		d.keys = k
		l.keepAEAD(d)
		return true
	}
	busy := make([]recDir, aeadRingMin+500)
	for round := range 3 {
		rebuilt := 0
		for i := range busy {
			if use(&busy[i]) {
				rebuilt++
			}
		}
		if want := []int{len(busy), 500, 0}[round]; rebuilt != want {
			t.Fatalf("round %d over %d busy directions: %d built, want %d (ring of %d)", round, len(busy), rebuilt, want, len(l.aeads))
		}
	}
	idle := make([]recDir, 2*len(l.aeads))
	for i := range idle {
		use(&idle[i])
	}
	if n := len(l.aeads); n != len(busy) {
		t.Errorf("ring of %d after directions built once; want it left at %d", n, len(busy))
	}
	for i := range busy {
		if busy[i].keys != nil {
			t.Fatalf("busy direction %d kept its keys while %d others were built", i, len(idle))
		}
	}
	l.clock += 2 * aeadBusyMs * int64(time.Millisecond)
	use(&busy[0])
	if n := len(l.aeads); n != len(busy) {
		t.Errorf("ring of %d after a rebuild %d ms after the eviction; want it left at %d", n, 2*aeadBusyMs, len(busy))
	}
}

// TestTLSRecordsAEADRingReusesFreedPlacesFirst: the places in the loop's ring of AEADs that
// ended directions freed (closed connections, new secrets) are taken by the next directions
// built before any direction's keys are evicted, and the ring does not grow.
func TestTLSRecordsAEADRingReusesFreedPlacesFirst(t *testing.T) {
	l := &Loop{clockSet: true}
	k := &recKeys{}
	kept := make([]recDir, aeadRingMin)
	for i := range kept {
		kept[i].keys = k
		l.keepAEAD(&kept[i])
	}
	for i := 0; i < len(kept); i += 2 {
		l.dropAEAD(&kept[i]) // half the directions end
	}
	next := make([]recDir, len(kept)/2)
	for i := range next {
		next[i].keys = k
		l.keepAEAD(&next[i])
	}
	for i := 1; i < len(kept); i += 2 {
		if kept[i].keys == nil {
			t.Fatalf("direction %d lost its keys while %d places were free", i, len(kept)/2)
		}
	}
	if n := len(l.aeads); n != aeadRingMin {
		t.Errorf("ring of %d; want %d", n, aeadRingMin)
	}
}

// TestTLSRecordsIgnoreUserCanceled: a user_canceled alert is dropped, as crypto/tls drops it
// in TLS 1.3 (some clients send it without ending), and the data after it is served.
func TestTLSRecordsIgnoreUserCanceled(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := pingedPeer(t, s, Echo{})
		p.send(p.record(recAlert, []byte{1, alertUserCanceled}, 0), p.record(recAppData, []byte("after"), 0))
		if got := p.read(5); got != "after" {
			t.Fatalf("echo after user_canceled: %q", got)
		}
	})
}

// TestTLSRecordsOverflowingPaddingAlerts: a record whose inner plaintext, padding included, is
// over 2^14+1 bytes gets record_overflow (RFC 8446 §5.4), as crypto/tls answers it, though its
// content is one byte.
func TestTLSRecordsOverflowingPaddingAlerts(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		p := pingedPeer(t, s, Echo{})
		p.send(p.record(recAppData, []byte("x"), maxPlaintext))
		if got := p.alert(); got != alertRecordOverflow {
			t.Errorf("alert %v; want record_overflow", tls.AlertError(got))
		}
	})
}

// halfCloser serves "bye" with "ok" and a CloseWrite, and tells what else it reads.
type halfCloser struct {
	closed chan error
	got    chan string
}

func (h *halfCloser) OnData(c *Conn) {
	b, _ := c.Peek(-1)
	s := string(b)
	c.Discard(len(b))
	if s == "bye" {
		c.Write([]byte("ok"))
		c.CloseWrite()
		return
	}
	h.got <- s
}

func (h *halfCloser) OnClose(_ *Conn, err error) { h.closed <- err }

// halfClosedPeer is a client of a halfCloser that has sent "bye" and read "ok", the server's
// close_notify and its FIN (CloseWrite).
func halfClosedPeer(t *testing.T, s setup) (*halfCloser, *recordPeer) {
	t.Helper()
	h := &halfCloser{closed: make(chan error, 1), got: make(chan string, 1)}
	p := newRecordPeer(t, tlsEngine(t, s, h), nil)
	p.send(p.record(recAppData, []byte("bye"), 0))
	if got := p.read(2); got != "ok" {
		t.Fatalf("before CloseWrite: %q", got)
	}
	p.closeNotifyThenEOF("after CloseWrite")
	return h, p
}

// TestTLSRecordsKeyUpdateAfterCloseWriteGetsNoReply: a KeyUpdate with update_requested that
// comes after the server's close_notify (CloseWrite) moves the receive key and gets no
// KeyUpdate back (nothing is sent after close_notify and the FIN); the data after it is
// served, and the client's close_notify ends the connection (io.EOF).
func TestTLSRecordsKeyUpdateAfterCloseWriteGetsNoReply(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h, p := halfClosedPeer(t, s)
		update := p.record(recHandshake, []byte{hsKeyUpdate, 0, 0, 1, 1}, 0)
		p.out.update(t)
		p.send(update, p.record(recAppData, []byte("more"), 0))
		if got := received(t, h.got, "the data after the KeyUpdate"); got != "more" {
			t.Fatalf("after the KeyUpdate: %q", got)
		}
		p.send(p.record(recAlert, []byte{1, alertCloseNotify}, 0))
		if err := received(t, h.closed, "the close"); err != io.EOF {
			t.Errorf("OnClose: %v; want io.EOF", err)
		}
	})
}

// TestTLSRecordsErrorAfterCloseWriteSaysNoAlertWasSent: a record error after the server's
// close_notify (CloseWrite) sends no alert (nothing follows close_notify and the FIN), and
// OnClose's error says so rather than naming an alert sent.
func TestTLSRecordsErrorAfterCloseWriteSaysNoAlertWasSent(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h, p := halfClosedPeer(t, s)
		bad := p.record(recAppData, []byte("tampered"), 0)
		bad[len(bad)-1] ^= 0x55
		p.send(bad)
		err := received(t, h.closed, "the close")
		if err == nil || !strings.Contains(err.Error(), "does not authenticate") || !strings.Contains(err.Error(), "not sent") {
			t.Errorf("OnClose: %v; want the record error, saying its alert was not sent", err)
		}
	})
}

// fdCloser echoes, and tells each connection's fd and OnClose's error.
type fdCloser struct {
	Echo
	closed chan string // "fd N: err"
}

func (h *fdCloser) OnClose(c *Conn, err error) { h.closed <- fmt.Sprintf("fd %d: %v", c.Fd(), err) }

// TestTLSRecordsErrorNamesTheReadAndTheFdOnce: the error a bad record closes the connection
// with (OnClose) has one prefix, naming the operation (the read of the records) and the
// connection's fd, as its other errors do: "server: TLS record read of fd N: REASON".
func TestTLSRecordsErrorNamesTheReadAndTheFdOnce(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := &fdCloser{closed: make(chan string, 1)}
		p := pingedPeer(t, s, h)
		bad := p.record(recAppData, []byte("tampered"), 0)
		bad[len(bad)-1] ^= 0x55
		p.send(bad)
		p.alert()
		got := received(t, h.closed, "the close")
		fd, err, _ := strings.Cut(got, ": ")
		reason, ok := strings.CutPrefix(err, "server: TLS record read of "+fd+": ")
		if !ok || strings.Contains(strings.ToLower(reason), "tls") {
			t.Errorf("OnClose of %s: %s; want \"server: TLS record read of %s: \" and a reason without another prefix", fd, err, fd)
		}
	})
}

// TestTLSRecordsClearSecretsOfAFailedHandshake: the traffic secrets the key log gave a
// handshake that then failed (a client Finished that does not open) are cleared at its end,
// as a handshake's that succeeded are once the layer has them.
func TestTLSRecordsClearSecretsOfAFailedHandshake(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := newEchoCloser()
		e := tlsEngine(t, s, h)
		cfg := tlsClientConfig(t)
		cfg.Rand = sameBytes(0x43)
		var random [32]byte
		sameBytes(0x43).Read(random[:])
		hello := goClientHello(t, cfg)
		c := dialEngine(t, e)
		c.Write(hello)
		var sec *tlsSecrets
		eventually(t, "the handshake's secrets logged", func() bool {
			e.tls.keyMu.Lock()
			defer e.tls.keyMu.Unlock()
			if en, ok := e.tls.keys[random]; ok && en.t.sec != nil && en.t.sec.cn != 0 && en.t.sec.sn != 0 {
				sec = en.t.sec
			}
			return sec != nil
		})
		c.Write([]byte{recAppData, 3, 3, 0, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
		if err := h.reason(t); !errors.Is(err, ErrTLSHandshake) {
			t.Fatalf("OnClose: %v; want a handshake error", err)
		}
		var zero [maxSecret]byte
		if sec.client != zero || sec.server != zero {
			t.Errorf("after the failed handshake, its traffic secrets are still there: %x %x", sec.client[:sec.cn], sec.server[:sec.sn])
		}
	})
}

// openCloser is echoCloser that hands over each connection it opens.
type openCloser struct {
	*echoCloser
	opened chan *Conn
}

func (o openCloser) OnOpen(c *Conn) { o.opened <- c }

// TestTLSRecordsClearSecretsAtTheConnectionsEnd: once a connection served by the layer's own
// records has closed, its traffic secrets are zero and its AEADs are gone from the loop's ring.
func TestTLSRecordsClearSecretsAtTheConnectionsEnd(t *testing.T) {
	eachSetup(t, func(t *testing.T, s setup) {
		h := openCloser{newEchoCloser(), make(chan *Conn, 1)}
		e := tlsEngine(t, s, h)
		c := dialTLS(t, e, nil)
		c.Write([]byte("ping"))
		if got := readN(t, c, 4); got != "ping" {
			t.Fatalf("echo: %q", got)
		}
		sc := received(t, h.opened, "OnOpen")
		onLoop := func(f func() string) string {
			done := make(chan string, 1)
			if err := sc.l.Post(func() { done <- f() }); err != nil {
				t.Fatalf("Post: %v", err)
			}
			return received(t, done, "the loop's answer")
		}
		var sw *swRecords
		if got := onLoop(func() string {
			sw, _ = sc.tlsOf().rec.(*swRecords)
			return fmt.Sprintf("%T", sc.tlsOf().rec)
		}); sw == nil {
			t.Fatalf("record layer %s; want *swRecords", got)
		}
		c.Close()
		if err := h.reason(t); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("OnClose: %v", err)
		}
		var zero [maxSecret]byte
		if held := onLoop(func() string {
			var h []string
			for _, d := range []struct {
				name string
				d    *recDir
			}{{"receive", &sw.in}, {"send", &sw.out}} {
				if d.d.secret != zero {
					h = append(h, d.name+" secret")
				}
				if d.d.keys != nil || slices.Contains(sc.l.aeads, d.d) {
					h = append(h, d.name+" AEAD")
				}
			}
			return strings.Join(h, ", ")
		}); held != "" {
			t.Errorf("after the connection's end it still holds its %s", held)
		}
	})
}
