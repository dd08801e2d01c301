//go:build unix

package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"unsafe"

	"github.com/ringev/ringev"
	"golang.org/x/sys/unix"
)

// MaxDatagram is the largest datagram PacketConn receives and sends, in bytes: UDP's limit
// over IPv4 (65,507).
const MaxDatagram = 65507

// Sizes of a PacketConn's queues.
const (
	// packetRecvs is how many receives the requests path keeps in flight per socket (each
	// with a MaxDatagram buffer: about 1 MiB per loop).
	packetRecvs = 16
	// MaxQueuedDatagrams is how many datagrams a PacketConn holds queued or in flight;
	// WriteTo beyond that fails with an error wrapping unix.ENOBUFS.
	MaxQueuedDatagrams = 4096
)

// Tokens of a PacketConn's requests: a receive's is its slot's index, a send's has sendTok set.
const (
	sendTok  uint64 = 1 << 32
	closeTok uint64 = 1 << 33
)

// PacketConn is one loop's datagram socket of an Engine made by ListenPacket. Its methods
// belong to the loop's goroutine (PacketHandler.OnPacket and functions given to Loop.Post run
// there); from another goroutine they return an error wrapping ringev.ErrNotOwner.
type PacketConn struct {
	l      *Loop
	fd     int
	local  net.Addr
	inet6  bool // an AF_INET6 socket
	reqs   bool // receives and sends are the loop's requests (Loop.RecvMsg, SendMsg): APIRequests
	cb     ringev.Callback
	rslots []*pktSlot // the receives (reqs)
	recvs  int        // receives in flight (reqs)
	sall   []*pktSlot // every send slot, by its index (a send's token)
	sfree  []*pktSlot
	queue  []*pktSlot // datagrams to send at the turn's end
	sends  int        // sends in flight (reqs)
	held   int        // datagrams queued or in flight
	dirty  bool       // queue is not empty: the turn's end sends it

	ev       *ringev.FdEvent // readiness: the socket's fd event
	rbuf     []byte
	rsa      unix.RawSockaddrAny
	wblocked bool // readiness: the socket refused a datagram; Write readiness is awaited
	sa4      unix.SockaddrInet4
	sa6      unix.SockaddrInet6

	closing bool // shutdown: send what is queued, then close
	closed  bool // the socket's close was asked
	lclosed bool // the socket is closed
}

// pktSlot is one datagram's buffer, with what a RecvMsg or SendMsg request addresses.
type pktSlot struct {
	idx int
	buf []byte
	to  netip.AddrPort
	msg unix.Msghdr
	iov unix.Iovec
	sa  unix.RawSockaddrAny
}

// startPacket makes the loop's PacketConn on socket fd and starts receiving.
func (l *Loop) startPacket(fd int) error {
	pc := &PacketConn{l: l, fd: fd}
	if sa, err := unix.Getsockname(fd); err == nil {
		pc.local = sockaddrToNet(sa, unix.SOCK_DGRAM)
		_, pc.inet6 = sa.(*unix.SockaddrInet6)
	}
	l.pc = pc
	pc.reqs = l.e.o.api == APIRequests
	if !pc.reqs {
		pc.rbuf = make([]byte, MaxDatagram)
		ev, err := l.ev.AddFd(fd, ringev.Read, pc.handle)
		if err != nil {
			unix.Close(fd)
			pc.closed, pc.lclosed = true, true
			return err
		}
		ev.SetAutoClose(true)
		pc.ev = ev
		return nil
	}
	pc.cb = pc.onIO
	for i := range packetRecvs {
		s := &pktSlot{idx: i, buf: make([]byte, MaxDatagram)}
		pc.rslots = append(pc.rslots, s)
		if err := pc.armRecv(s); err != nil {
			pc.closeNow()
			return err
		}
	}
	return nil
}

// LocalAddr is the socket's address (a *net.UDPAddr).
func (pc *PacketConn) LocalAddr() net.Addr { return pc.local }

// Loop is the loop that serves the socket.
func (pc *PacketConn) Loop() *Loop { return pc.l }

// Fd is the socket, for socket options; do not read, write or close it.
func (pc *PacketConn) Fd() int { return pc.fd }

// WriteTo queues p as a datagram to to and returns len(p); it is sent at the end of the loop's
// turn, with the turn's other datagrams (one SendMsg request each with APIRequests: on uring
// all in one io_uring_enter(2)). p may be reused at once. Errors: ErrNotOwner
// (wrapped) from another goroutine, net.ErrClosed after shutdown, one wrapping unix.EMSGSIZE
// past MaxDatagram, unix.ENOBUFS past MaxQueuedDatagrams, unix.EAFNOSUPPORT for an IPv6
// address on an IPv4 socket.
func (pc *PacketConn) WriteTo(p []byte, to netip.AddrPort) (int, error) {
	if !pc.l.ev.Owned() {
		return 0, fmt.Errorf("server: PacketConn.WriteTo from a goroutine other than its loop's: %w", ringev.ErrNotOwner)
	}
	if pc.closing || pc.closed {
		return 0, net.ErrClosed
	}
	if len(p) > MaxDatagram {
		return 0, fmt.Errorf("server: WriteTo: %d-byte datagram: %w", len(p), unix.EMSGSIZE)
	}
	if !pc.inet6 && to.Addr().Is6() && !to.Addr().Is4In6() {
		return 0, fmt.Errorf("server: WriteTo %v from an IPv4 socket: %w", to, unix.EAFNOSUPPORT)
	}
	if pc.held >= MaxQueuedDatagrams {
		return 0, fmt.Errorf("server: WriteTo: %d datagrams queued: %w", pc.held, unix.ENOBUFS)
	}
	var s *pktSlot
	if n := len(pc.sfree); n > 0 {
		s = pc.sfree[n-1]
		pc.sfree = pc.sfree[:n-1]
	} else {
		s = &pktSlot{idx: len(pc.sall)}
		pc.sall = append(pc.sall, s)
	}
	pc.held++
	s.buf, s.to = append(s.buf[:0], p...), to
	pc.queue = append(pc.queue, s)
	if !pc.dirty {
		pc.dirty = true
		pc.l.schedule()
	}
	return len(p), nil
}

// armRecv submits slot s's RecvMsg.
func (pc *PacketConn) armRecv(s *pktSlot) error {
	s.iov = unix.Iovec{Base: &s.buf[0]}
	s.iov.SetLen(len(s.buf))
	s.msg = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&s.sa)), Namelen: unix.SizeofSockaddrAny, Iov: &s.iov, Iovlen: 1}
	if _, err := pc.l.ev.RecvMsg(pc.fd, &s.msg, 0, pc.cb, uint64(s.idx)); err != nil {
		return err
	}
	pc.recvs++
	return nil
}

// onIO is the socket's requests' callback (the requests path).
func (pc *PacketConn) onIO(x *ringev.Completion) {
	switch {
	case x.Token == closeTok:
		pc.lclosed = true
		pc.l.maybeDone()
	case x.Token&sendTok != 0:
		s := pc.sall[x.Token&^sendTok]
		pc.sends--
		pc.held--
		if x.Err != nil && !pc.closed {
			pc.l.e.logf("sendmsg to %v: %v", s.to, x.Err)
		}
		pc.sfree = append(pc.sfree, s)
		pc.maybeClose()
	default:
		s := pc.rslots[x.Token]
		pc.recvs--
		if pc.closed {
			return
		}
		if x.Err == nil {
			if pc.l.e.ph != nil && !pc.closing {
				pc.l.e.ph.OnPacket(pc, rawToAddrPort(&s.sa), s.buf[:x.N])
			}
		} else if !errors.Is(x.Err, unix.ECANCELED) {
			pc.l.e.logf("recvmsg: %v", x.Err)
		}
		if !pc.closing && !pc.closed {
			if err := pc.armRecv(s); err != nil {
				pc.l.e.logf("recvmsg: %v", err)
			}
		}
	}
}

// handle is the socket's fd handler (the readiness path): datagrams are received until the
// socket is empty (at most 64 a call), and a refused send goes on.
func (pc *PacketConn) handle(_ *ringev.FdEvent, flags ringev.Flags) {
	if flags&ringev.Write != 0 {
		pc.wblocked = false
		pc.flush()
	}
	if flags&ringev.Read == 0 {
		return
	}
	for range 64 {
		salen := uint32(unix.SizeofSockaddrAny)
		r, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(pc.fd), uintptr(unsafe.Pointer(&pc.rbuf[0])), uintptr(len(pc.rbuf)),
			unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&pc.rsa)), uintptr(unsafe.Pointer(&salen)))
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return
		case errno != 0:
			pc.l.e.logf("recvfrom: %v", errno)
			return
		}
		if pc.closing || pc.closed {
			continue
		}
		pc.l.e.ph.OnPacket(pc, rawToAddrPort(&pc.rsa), pc.rbuf[:r])
	}
}

// flush sends the queued datagrams (the turn's end).
func (pc *PacketConn) flush() {
	pc.dirty = false
	if pc.closed {
		return
	}
	if pc.reqs {
		for i, s := range pc.queue {
			pc.queue[i] = nil
			s.msg = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&s.sa)), Iov: &s.iov, Iovlen: 1}
			s.msg.Namelen = putAddrPort(&s.sa, s.to, pc.inet6)
			s.iov = unix.Iovec{}
			if len(s.buf) > 0 {
				s.iov.Base = &s.buf[0]
			}
			s.iov.SetLen(len(s.buf))
			if _, err := pc.l.ev.SendMsg(pc.fd, &s.msg, 0, pc.cb, sendTok|uint64(s.idx)); err != nil {
				pc.l.e.logf("sendmsg: %v", err)
				pc.held--
				pc.sfree = append(pc.sfree, s)
				continue
			}
			pc.sends++
		}
		pc.queue = pc.queue[:0]
		pc.maybeClose()
		return
	}
	if pc.wblocked {
		return
	}
	sent := 0
	for _, s := range pc.queue {
		var sa unix.Sockaddr
		if a := s.to.Addr(); a.Is4() && !pc.inet6 || a.Is4In6() && !pc.inet6 {
			pc.sa4.Addr, pc.sa4.Port = a.Unmap().As4(), int(s.to.Port())
			sa = &pc.sa4
		} else {
			pc.sa6.Addr, pc.sa6.Port = a.As16(), int(s.to.Port())
			sa = &pc.sa6
		}
		err := unix.Sendto(pc.fd, s.buf, unix.MSG_DONTWAIT, sa)
		if errors.Is(err, unix.EAGAIN) {
			pc.wblocked = true
			break
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			pc.l.e.logf("sendto %v: %v", s.to, err)
		}
		sent++
	}
	for _, s := range pc.queue[:sent] {
		pc.held--
		pc.sfree = append(pc.sfree, s)
	}
	pc.queue = pc.queue[:copy(pc.queue, pc.queue[sent:])]
	if f := ringev.Read | writeFlag(pc.wblocked); pc.ev != nil && pc.ev.Flags() != f {
		pc.ev.SetFlags(f)
	}
	pc.maybeClose()
}

// writeFlag is ringev.Write when on, else 0.
func writeFlag(on bool) ringev.Flags {
	if on {
		return ringev.Write
	}
	return 0
}

// shutdown stops receiving: what is queued is sent, then the socket closes.
func (pc *PacketConn) shutdown() {
	pc.closing = true
	if pc.dirty {
		return // the turn's end sends, then maybeClose closes
	}
	pc.maybeClose()
}

// maybeClose closes a closing socket once nothing is queued or in flight.
func (pc *PacketConn) maybeClose() {
	if pc.closing && !pc.closed && len(pc.queue) == 0 && pc.sends == 0 {
		pc.closeNow()
	}
}

// closeNow closes the socket, dropping what is queued.
func (pc *PacketConn) closeNow() {
	if pc.closed {
		return
	}
	pc.closing, pc.closed = true, true
	pc.queue = pc.queue[:0]
	if pc.ev != nil {
		pc.ev.Close()
		pc.lclosed = true
		pc.l.maybeDone()
		return
	}
	if _, err := pc.l.ev.CloseFd(pc.fd, pc.cb, closeTok); err != nil {
		pc.l.e.logf("closing the datagram socket: %v", err)
		unix.Close(pc.fd)
		pc.lclosed = true
		pc.l.maybeDone()
	}
}

// idle reports whether the socket is closed (the loop may stop).
func (pc *PacketConn) idle() bool { return pc.lclosed }

// rawToAddrPort converts a received address to a netip.AddrPort (the zero one for another
// family).
func rawToAddrPort(sa *unix.RawSockaddrAny) netip.AddrPort {
	switch sa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(p.Addr), netPort(&p.Port))
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom16(p.Addr), netPort(&p.Port))
	}
	return netip.AddrPort{}
}

// putAddrPort writes ap into sa, for a socket of family AF_INET6 (inet6) or AF_INET, and
// returns its length.
func putAddrPort(sa *unix.RawSockaddrAny, ap netip.AddrPort, inet6 bool) uint32 {
	*sa = unix.RawSockaddrAny{}
	a := ap.Addr()
	if !inet6 {
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		p.Family, p.Addr = unix.AF_INET, a.Unmap().As4()
		setNetPort(&p.Port, ap.Port())
		return unix.SizeofSockaddrInet4
	}
	p := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
	p.Family, p.Addr = unix.AF_INET6, a.As16()
	setNetPort(&p.Port, ap.Port())
	return unix.SizeofSockaddrInet6
}

// netPort reads a sockaddr's port, which is in network byte order.
func netPort(p *uint16) uint16 {
	return binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(p))[:])
}

// setNetPort writes a sockaddr's port in network byte order.
func setNetPort(p *uint16, port uint16) {
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(p))[:], port)
}
