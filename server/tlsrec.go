//go:build unix

package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	gohash "hash"
	"io"
	"math"
	"slices"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// ringev's own TLS 1.3 record layer (RFC 8446 §5), for a server's connection once crypto/tls's
// handshake has ended: the recordLayer that kernel TLS would be, in software. crypto/tls runs
// the whole handshake; its traffic secrets reach the layer through the config's KeyLogWriter
// (keyLog), matched to the connection by the ClientHello's random. Then the tls.Conn is
// dropped, and its transport: the connection keeps a snapshot of its ConnectionState and, per
// direction, the traffic secret and sequence number. The key and IV derived from a secret, and
// the AEAD (an expanded AES key and GHASH table, or a ChaCha20 key), are made when a record needs
// them and kept in a per-loop ring (aeadRing), so a connection idle while others were busy
// holds none. TLS 1.2, a suite the layer does not know, a handshake whose secrets did not
// arrive, and DialTLS's client side keep goRecords.

// Record sizes (RFC 8446 §5.1, §5.2).
const (
	recHeader     = 5
	maxPlaintext  = 1 << 14        // TLSInnerPlaintext's content
	maxCiphertext = 1<<14 + 256    // TLSCiphertext's length
	maxUseless    = 16             // records in a row that give no data (crypto/tls's bound)
	recNonce      = 12             // every TLS 1.3 suite's IV
	maxSecret     = sha512.Size384 // SHA-384's, the longest suite hash
)

// Content types and alerts (RFC 8446 §5.1, §6).
const (
	recAlert     = 21
	recHandshake = 22
	recAppData   = 23

	alertCloseNotify       = 0
	alertUserCanceled      = 90
	alertUnexpectedMessage = 10
	alertBadRecordMAC      = 20
	alertRecordOverflow    = 22
	alertDecodeError       = 50
	alertIllegalParameter  = 47
	alertInternalError     = 80

	hsKeyUpdate = 24
)

// tlsSecrets is what the key log gives a connection's handshake: its ClientHello's random (the
// key), then its application traffic secrets. Under the tlsServer's keyMu until the handshake's
// end takes them.
type tlsSecrets struct {
	random         [32]byte
	client, server [maxSecret]byte
	cn, sn         uint8 // their lengths; 0 until logged
}

// keyLog is the KeyLogWriter of an engine's TLS configs: it takes each line's application
// traffic secrets for the connection whose ClientHello had the line's random, and passes the
// line on to the user's KeyLogWriter, if any.
type keyLog struct {
	s    *tlsServer
	next io.Writer
}

func (k keyLog) Write(p []byte) (int, error) {
	if k.next != nil {
		if _, err := k.next.Write(p); err != nil {
			return 0, err
		}
	}
	k.s.keyLine(p)
	return len(p), nil
}

// keyLogConfig returns the config the engine serves with: a clone of cfg whose KeyLogWriter
// is keyLog (chained to cfg's), and whose GetConfigForClient, if any, gives the same to the
// configs it returns. nil for nil.
func (s *tlsServer) keyLogConfig(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return nil
	}
	c := cfg.Clone()
	c.KeyLogWriter = keyLog{s, cfg.KeyLogWriter}
	if get := cfg.GetConfigForClient; get != nil {
		c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			sc, err := get(hello)
			if sc == nil {
				return sc, err
			}
			if k, ok := sc.KeyLogWriter.(keyLog); ok && k.s == s {
				return sc, err
			}
			sc = sc.Clone()
			sc.KeyLogWriter = keyLog{s, sc.KeyLogWriter}
			return sc, err
		}
	}
	return c
}

// keyEntry is a random's connection; n counts the connections that sent it (a client that
// repeats another's random gets no secrets, nor does the other: both keep goRecords). Once a
// second has come, t is nil for good: the one left when the others go gets none either.
type keyEntry struct {
	t *tlsConn
	n int
}

// keyLine takes a key log line: "LABEL <client random, hex> <secret, hex>\n".
func (s *tlsServer) keyLine(p []byte) {
	var client bool
	switch {
	case hasPrefix(p, "CLIENT_TRAFFIC_SECRET_0 "):
		client = true
		p = p[len("CLIENT_TRAFFIC_SECRET_0 "):]
	case hasPrefix(p, "SERVER_TRAFFIC_SECRET_0 "):
		p = p[len("SERVER_TRAFFIC_SECRET_0 "):]
	default:
		return
	}
	var rnd [32]byte
	if len(p) < 2*len(rnd)+1 || p[2*len(rnd)] != ' ' {
		return
	}
	if _, err := hex.Decode(rnd[:], p[:2*len(rnd)]); err != nil {
		return
	}
	p = p[2*len(rnd)+1:]
	if len(p) > 0 && p[len(p)-1] == '\n' {
		p = p[:len(p)-1]
	}
	if len(p) > 2*maxSecret || len(p)%2 != 0 {
		return
	}
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	e, ok := s.keys[rnd]
	if !ok || e.n != 1 || e.t == nil {
		return
	}
	sec := e.t.sec
	dst, n := &sec.server, &sec.sn
	if client {
		dst, n = &sec.client, &sec.cn
	}
	if _, err := hex.Decode(dst[:], p); err == nil {
		*n = uint8(len(p) / 2)
	}
}

func hasPrefix(p []byte, s string) bool { return len(p) >= len(s) && string(p[:len(s)]) == s }

// register makes t's handshake the one of the ClientHello random in hello (the first record),
// for keyLine, and reports whether it did. A ClientHello too short to hold one is left to
// crypto/tls, with goRecords after.
func (s *tlsServer) register(t *tlsConn, hello []byte) bool {
	// record header (5), handshake type and length (4), legacy_version (2), random (32)
	if len(hello) < 43 || hello[0] != recHandshake || hello[5] != 1 {
		return false
	}
	sec := new(tlsSecrets)
	copy(sec.random[:], hello[11:43])
	s.keyMu.Lock()
	t.sec = sec
	if s.keys == nil {
		s.keys = make(map[[32]byte]keyEntry)
	}
	e := s.keys[sec.random]
	s.keys[sec.random] = keyEntry{t, e.n + 1}
	s.keyMu.Unlock()
	return true
}

// wipe clears the secrets; sec may be nil.
func (sec *tlsSecrets) wipe() {
	if sec != nil {
		clear(sec.client[:])
		clear(sec.server[:])
	}
}

// unregister ends t's entry and returns its secrets, nil when it had none or shared its
// random (those it wipes). The caller wipes the secrets returned once used.
func (s *tlsServer) unregister(t *tlsConn) *tlsSecrets {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	sec := t.sec
	if sec == nil {
		return nil
	}
	t.sec = nil
	e := s.keys[sec.random]
	if e.n <= 1 {
		delete(s.keys, sec.random)
	} else {
		s.keys[sec.random] = keyEntry{nil, e.n - 1}
	}
	if e.n != 1 || e.t != t {
		sec.wipe()
		return nil
	}
	return sec
}

// recDir is one direction's record protection: its traffic secret, the next record's sequence
// number, and, while the loop's aeadRing holds them, the AEAD and IV derived from the secret
// (RFC 8446 §7.3).
type recDir struct {
	secret [maxSecret]byte
	seq    uint64
	keys   *recKeys
	// slot is keys' place in the loop's aeadRing while keys is set; once the ring has evicted
	// them (evicted set), slot is the eviction's time instead (the loop's clock in ms,
	// truncated to 32 bits), for keepAEAD's test of a rebuild soon after.
	slot    int32
	evicted bool
}

// recKeys is a direction's AEAD (its key expanded) and IV.
type recKeys struct {
	aead  cipher.AEAD
	iv    [recNonce]byte
	nonce [recNonce]byte // nonce's scratch: a local's slice would escape through cipher.AEAD
}

// suiteInfo is what the layer needs of a TLS 1.3 cipher suite: its hash and key length.
func suiteInfo(id uint16) (h func() gohash.Hash, keyLen int, ok bool) {
	switch id {
	case tls.TLS_AES_128_GCM_SHA256:
		return sha256.New, 16, true
	case tls.TLS_AES_256_GCM_SHA384:
		return sha512.New384, 32, true
	case tls.TLS_CHACHA20_POLY1305_SHA256:
		return sha256.New, chacha20poly1305.KeySize, true
	}
	return nil, 0, false
}

// expandLabel is HKDF-Expand-Label (RFC 8446 §7.1) with an empty context.
func expandLabel(h func() gohash.Hash, secret []byte, label string, n int) ([]byte, error) {
	var info [2 + 1 + len("tls13 ") + len("traffic upd") + 1]byte
	b := append(info[:0], byte(n>>8), byte(n), byte(len("tls13 ")+len(label)))
	b = append(b, "tls13 "...)
	b = append(b, label...)
	b = append(b, 0)
	return hkdf.Expand(h, secret, string(b), n)
}

// swRecords is the layer's record path for one connection.
type swRecords struct {
	t     *tlsConn
	st    *tls.ConnectionState // the handshake's, for Conn.TLS
	suite uint16
	hlen  uint8 // the suite hash's size: the secrets' length
	klen  uint8
	in    recDir
	out   recDir
	part  []byte  // a record received in part, nil between records
	hs    [5]byte // a post-handshake message received in part (a KeyUpdate's at most)
	hsN   uint8
	// useless counts the records in a row that gave no data (empty ones, KeyUpdates).
	useless uint8
	// fatal is the alert a record error calls for (alert), sent by tlsConn.fail after the
	// replies to the records before it; 0 for none (close_notify is never fatal).
	fatal uint8
}

// setSecret makes secret d's traffic secret; its key and IV are derived when next needed
// (aeadOf). The sequence number starts at 0.
func (r *swRecords) setSecret(d *recDir, secret []byte) {
	r.t.c.l.dropAEAD(d)
	copy(d.secret[:], secret)
	d.seq = 0
}

// update moves d to its next traffic secret (RFC 8446 §7.2, "traffic upd").
func (r *swRecords) update(d *recDir) error {
	h, _, _ := suiteInfo(r.suite)
	next, err := expandLabel(h, d.secret[:r.hlen], "traffic upd", int(r.hlen))
	if err != nil {
		return err
	}
	r.setSecret(d, next)
	clear(next)
	return nil
}

// aeadOf returns d's keys, deriving them from its secret (and giving them a place in the
// loop's ring) if needed.
func (r *swRecords) aeadOf(d *recDir) (*recKeys, error) {
	if d.keys != nil {
		return d.keys, nil
	}
	h, _, _ := suiteInfo(r.suite)
	key, err := expandLabel(h, d.secret[:r.hlen], "key", int(r.klen))
	if err != nil {
		return nil, err
	}
	defer clear(key)
	iv, err := expandLabel(h, d.secret[:r.hlen], "iv", recNonce)
	if err != nil {
		return nil, err
	}
	k := &recKeys{}
	copy(k.iv[:], iv)
	if r.suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		k.aead, err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			k.aead, err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		return nil, err
	}
	d.keys = k
	r.t.c.l.keepAEAD(d)
	return k, nil
}

// nonce returns d's per-record nonce, the IV xored with the sequence number (RFC 8446 §5.3),
// in its keys' scratch: valid until the next call. d's keys are set.
func (d *recDir) nonce() []byte {
	k := d.keys
	k.nonce = k.iv
	for i := range 8 {
		k.nonce[recNonce-1-i] ^= byte(d.seq >> (8 * i))
	}
	return k.nonce[:]
}

// aeadRing is a loop's AEADs of its TLS connections' directions (Loop.aeads), in the order
// built: building one takes a place an ended direction freed (Loop.aeadFree), else evicts the
// oldest, whose direction builds it again when it next needs it, so a connection that has been
// idle while others were busy holds none. A rebuild derives the key and IV and expands the
// key (its cost: docs/design.md): a direction rebuilt within aeadBusyMs
// (milliseconds) of its eviction shows the ring smaller than the directions busy at once, and
// the ring grows by one entry instead of evicting, up to aeadRingMax entries; it never
// shrinks.
const (
	aeadRingMin = 256
	aeadRingMax = 1 << 16
	aeadBusyMs  = 1000
)

// keepAEAD gives d's new keys a place in the ring: a freed one, else the oldest's, whose keys
// it evicts, unless the ring grows.
func (l *Loop) keepAEAD(d *recDir) {
	if l.aeads == nil {
		l.aeads = make([]*recDir, aeadRingMin)
	}
	if n := len(l.aeadFree); n > 0 {
		i := l.aeadFree[n-1]
		l.aeadFree = l.aeadFree[:n-1]
		l.aeads[i] = d
		d.slot, d.evicted = i, false
		return
	}
	now := uint32(l.turnTime() / 1e6) // ms; the difference below survives its wrap
	if d.evicted && now-uint32(d.slot) < aeadBusyMs && len(l.aeads) < aeadRingMax {
		d.evicted = false
		l.aeads = append(l.aeads, d)
		d.slot = int32(len(l.aeads) - 1)
		return
	}
	i := l.aeadNext
	l.aeadNext = (i + 1) % len(l.aeads)
	if old := l.aeads[i]; old != nil {
		old.keys, old.evicted = nil, true
		old.slot = int32(now) // when, for its rebuild
	}
	l.aeads[i] = d
	d.slot, d.evicted = int32(i), false
}

// dropAEAD forgets d's keys (a new secret, or the connection's end) and frees their place,
// for the next keys built.
func (l *Loop) dropAEAD(d *recDir) {
	if d.keys == nil {
		return
	}
	d.keys = nil
	if l.aeads[d.slot] == d {
		l.aeads[d.slot] = nil
		l.aeadFree = append(l.aeadFree, d.slot)
	}
}

// newSWRecords makes t's record layer after a handshake that succeeded, or returns nil when
// goRecords must serve it: no secrets (sec nil), not TLS 1.3, a suite it does not know,
// secrets not of the suite hash's length, or a send key it cannot derive. flight is all the
// handshake sent: its records that open under the server's application key (the
// NewSessionTickets) set the send sequence number. It wipes sec's secrets in every case.
func newSWRecords(t *tlsConn, sec *tlsSecrets, flight []byte) *swRecords {
	if sec == nil {
		return nil
	}
	defer sec.wipe()
	st := t.tc.ConnectionState()
	h, klen, ok := suiteInfo(st.CipherSuite)
	if st.Version != tls.VersionTLS13 || !ok || int(sec.cn) != h().Size() || int(sec.sn) != h().Size() {
		return nil
	}
	r := &swRecords{t: t, st: &st, suite: st.CipherSuite, hlen: uint8(h().Size()), klen: uint8(klen)}
	r.setSecret(&r.in, sec.client[:sec.cn])
	r.setSecret(&r.out, sec.server[:sec.sn])
	// The server's NewSessionTicket records went out under its application key within the
	// handshake: the send sequence goes on after them. They are the flight's records that open
	// under it (the others are under the handshake key).
	k, err := r.aeadOf(&r.out)
	if err != nil {
		r.end()
		return nil
	}
	var scratch []byte
	for len(flight) >= recHeader {
		n := recLen(flight)
		if n > len(flight) {
			break
		}
		rec := flight[:n]
		flight = flight[n:]
		if rec[0] != recAppData {
			continue
		}
		nonce := r.out.nonce()
		if _, err := k.aead.Open(scratch[:0], nonce, rec[recHeader:], rec[:recHeader]); err == nil {
			r.out.seq++
		}
	}
	return r
}

// end clears the secrets and keys and gives back the AEADs.
func (r *swRecords) end() {
	for _, d := range []*recDir{&r.in, &r.out} {
		r.t.c.l.dropAEAD(d)
		clear(d.secret[:])
	}
	r.part = nil
}

func (r *swRecords) state() tls.ConnectionState { return *r.st }

func (r *swRecords) closeNotify() error { return r.write(recAlert, []byte{1, alertCloseNotify}) }

// sendFatal sends the fatal alert a record error called for, if any, unless a close_notify was
// sent (nothing follows it but the FIN).
func (r *swRecords) sendFatal() {
	if r.fatal != 0 && !r.t.notified {
		r.write(recAlert, []byte{2, r.fatal})
	}
}

func (r *swRecords) seal(plain []byte) error {
	for len(plain) > 0 {
		n := min(len(plain), maxPlaintext)
		if err := r.write(recAppData, plain[:n]); err != nil {
			return err
		}
		plain = plain[n:]
	}
	return nil
}

// write appends a record of content type typ with content p to the connection's output,
// sealed under the send key.
func (r *swRecords) write(typ byte, p []byte) error {
	c := r.t.c
	if c.closed {
		return nil
	}
	d := &r.out
	if d.seq == math.MaxUint64 {
		return errors.New("the send sequence number would wrap")
	}
	k, err := r.aeadOf(d)
	if err != nil {
		return err
	}
	size := len(p) + 1 + k.aead.Overhead()
	if c.pend == nil {
		c.pend = c.l.bufs.get()
	}
	b := slices.Grow(c.pend, recHeader+size)
	start := len(b)
	b = append(b, recAppData, 3, 3, byte(size>>8), byte(size))
	b = append(b, p...)
	b = append(b, typ)
	nonce := d.nonce()
	k.aead.Seal(b[start+recHeader:start+recHeader], nonce, b[start+recHeader:], b[start:start+recHeader])
	d.seq++
	c.pend = b[:start+recHeader+size]
	c.wrote(recHeader + size)
	if !c.dirty {
		c.l.markDirty(c)
	}
	return nil
}

// alert notes the fatal alert desc for tlsConn.fail to send, and returns the error that ends
// the connection for it, which says whether the alert is sent: not after the connection's
// close_notify (sendFatal).
func (r *swRecords) alert(desc uint8, format string, args ...any) error {
	sent := "sent"
	if r.t.notified {
		sent = "not sent: close_notify was"
	} else if r.fatal == 0 {
		r.fatal = desc
	}
	name := strings.TrimPrefix(tls.AlertError(desc).Error(), "tls: ") // (the prefix is the caller's)
	return fmt.Errorf("%s (alert %s %s)", fmt.Sprintf(format, args...), name, sent)
}

func (r *swRecords) open(data []byte) error {
	if r.t.peerNotified {
		return nil // nothing counts after the peer's close_notify
	}
	c := r.t.c
	buf := c.l.tlsBuf()
	off := 0
	// The plaintext of every record in data goes to the handler in one OnData, as goRecords
	// does; only a full buffer hands over before the end.
	flush := func() bool {
		if off > 0 {
			c.tlsPlain(buf[:off])
			off = 0
		}
		return !c.closed && !c.closing && c.fl&cfLingering == 0
	}
	for {
		var rec []byte
		if r.part != nil {
			for { // the header, then the body
				k := min(r.need()-len(r.part), len(data))
				r.part = append(r.part, data[:k]...)
				data = data[k:]
				if err := r.header(r.part); err != nil {
					flush()
					return err
				}
				if len(r.part) == r.need() || len(data) == 0 {
					break
				}
			}
			if len(r.part) < r.need() {
				break // the rest is in a later receive
			}
			rec, r.part = r.part, nil
		} else {
			if len(data) == 0 {
				break
			}
			if err := r.header(data); err != nil {
				flush()
				return err
			}
			if n := recLen(data); len(data) < n {
				r.part = append(make([]byte, 0, n), data...)
				break
			} else {
				rec, data = data[:n], data[n:]
			}
		}
		if off+len(rec) > len(buf) && !flush() {
			return nil // input is dropped from now on
		}
		n, eof, err := r.record(rec, buf[off:off])
		off += n
		if err != nil {
			flush()
			return err
		}
		if eof {
			r.t.peerNotified = true
			flush()
			if !c.closed && c.fl&cfEOF == 0 {
				c.peerEOF()
			}
			return nil
		}
	}
	flush()
	return nil
}

// recLen is the length of the record b starts, header included: the header's alone until b
// holds it whole.
func recLen(b []byte) int {
	if len(b) < recHeader {
		return recHeader
	}
	return recHeader + (int(b[3])<<8 | int(b[4]))
}

// need is the length of the record r.part starts (recLen).
func (r *swRecords) need() int { return recLen(r.part) }

// header checks what b holds of a record's header: protected records only (RFC 8446 §5), of
// at most maxCiphertext bytes.
func (r *swRecords) header(b []byte) error {
	if len(b) > 0 && b[0] != recAppData {
		return r.alert(alertUnexpectedMessage, "a record of type %d after the handshake", b[0])
	}
	if len(b) >= recHeader {
		if n := int(b[3])<<8 | int(b[4]); n > maxCiphertext {
			return r.alert(alertRecordOverflow, "oversized record received with length %d", n)
		} else if n == 0 {
			return r.alert(alertDecodeError, "an empty protected record")
		}
	}
	return nil
}

// record opens one whole record into dst (which has room for its plaintext) and acts on it:
// it returns the bytes of application data it put there, or eof at a close_notify.
func (r *swRecords) record(rec, dst []byte) (n int, eof bool, err error) {
	d := &r.in
	k, err := r.aeadOf(d)
	if err != nil {
		return 0, false, r.alert(alertInternalError, "%v", err)
	}
	if d.seq == math.MaxUint64 {
		return 0, false, r.alert(alertInternalError, "the receive sequence number would wrap")
	}
	nonce := d.nonce()
	pt, err := k.aead.Open(dst, nonce, rec[recHeader:], rec[:recHeader])
	if err != nil {
		return 0, false, r.alert(alertBadRecordMAC, "a record that does not authenticate")
	}
	d.seq++
	if len(pt) > maxPlaintext+1 {
		// TLSInnerPlaintext: the content, its type and the padding (RFC 8446 §5.4).
		return 0, false, r.alert(alertRecordOverflow, "a record of %d bytes of inner plaintext", len(pt))
	}
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		return 0, false, r.alert(alertUnexpectedMessage, "a record without a content type")
	}
	typ, content := pt[i], pt[:i]
	if r.hsN > 0 && typ != recHandshake {
		return 0, false, r.alert(alertUnexpectedMessage, "a handshake message cut by a record of type %d", typ)
	}
	switch typ {
	case recAppData:
		if len(content) > 0 {
			r.useless = 0
			return len(content), false, nil
		}
		return 0, false, r.uselessRecord()
	case recAlert:
		if len(content) != 2 {
			return 0, false, r.alert(alertUnexpectedMessage, "an alert of %d bytes", len(content))
		}
		switch content[1] {
		case alertCloseNotify:
			return 0, true, nil
		case alertUserCanceled:
			// Dropped, as crypto/tls drops it in TLS 1.3: some clients send it and go on.
			return 0, false, r.uselessRecord()
		}
		r.t.notified = true // a fatal alert is answered with none
		return 0, false, fmt.Errorf("remote error: %w", tls.AlertError(content[1]))
	case recHandshake:
		if len(content) == 0 {
			return 0, false, r.alert(alertUnexpectedMessage, "an empty handshake record")
		}
		return 0, false, r.handshakeMessage(content)
	}
	return 0, false, r.alert(alertUnexpectedMessage, "a record of content type %d", typ)
}

// uselessRecord counts a record that gave no data: past maxUseless in a row the peer is
// wasting the loop.
func (r *swRecords) uselessRecord() error {
	r.useless++
	if r.useless > maxUseless {
		return r.alert(alertUnexpectedMessage, "too many records in a row without data")
	}
	return nil
}

// handshakeMessage takes a handshake record's content after the handshake: a KeyUpdate is the
// one message a client may send (RFC 8446 §4.6.3), and it ends its record.
func (r *swRecords) handshakeMessage(b []byte) error {
	for len(b) > 0 {
		k := copy(r.hs[r.hsN:], b)
		r.hsN += uint8(k)
		b = b[k:]
		if r.hsN >= 4 && (r.hs[0] != hsKeyUpdate || r.hs[1] != 0 || r.hs[2] != 0 || r.hs[3] != 1) {
			return r.alert(alertUnexpectedMessage, "a handshake message of type %d after the handshake", r.hs[0])
		}
		if r.hsN < 5 {
			return nil // the rest is in the next record
		}
		r.hsN = 0
		if len(b) > 0 {
			return r.alert(alertUnexpectedMessage, "a KeyUpdate not at its record's end")
		}
		if err := r.uselessRecord(); err != nil {
			return err
		}
		req := r.hs[4]
		if req > 1 {
			return r.alert(alertIllegalParameter, "a KeyUpdate's request_update %d", req)
		}
		if err := r.update(&r.in); err != nil {
			return r.alert(alertInternalError, "%v", err)
		}
		if req == 1 && !r.t.notified {
			// update_requested: a KeyUpdate of ours, update_not_requested, under the old
			// key, then the new one for what follows. None once our close_notify has gone
			// (CloseWrite): nothing may follow it, and the FIN.
			if err := r.write(recHandshake, []byte{hsKeyUpdate, 0, 0, 1, 0}); err != nil {
				return err
			}
			if err := r.update(&r.out); err != nil {
				return r.alert(alertInternalError, "%v", err)
			}
		}
	}
	return nil
}
