//go:build unix

package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Port sharing of listenSocket's sockets.
const (
	reuseNone  = iota // the socket is the only one on its address
	reuseFirst        // the first of a SO_REUSEPORT group: the address must be free
	reuseJoin         // a later one of the group: it joins the port the first one bound
)

// listenSocket opens a non-blocking, close-on-exec socket for network on addr: a listening
// stream socket for "tcp", "tcp4", "tcp6" (backlog 4096, capped by net.core.somaxconn) and
// "unix" (a path), or a bound datagram socket for "udp", "udp4", "udp6". TCP and UDP sockets get
// SO_REUSEADDR, and SO_REUSEPORT unless reuse is reuseNone, so that several loops can each have
// one on the same port. SO_REUSEPORT would also let the socket share a port with another
// process's SO_REUSEPORT sockets (the kernel then splits the clients between them), so with
// reuseFirst the address is first tried without it (claimFree): a port in use is an error, as
// with net.Listen. It returns the fd and the address bound (with the port a port 0 got). Errors
// name the network and address and wrap the errno (unix.EADDRINUSE, unix.EACCES, ...).
func listenSocket(network, addr string, reuse int) (fd int, bound net.Addr, err error) {
	var sa unix.Sockaddr
	family, typ := unix.AF_INET, unix.SOCK_STREAM
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		var ip net.IP
		var port int
		var zone string
		if network[0] == 't' {
			a, err := net.ResolveTCPAddr(network, addr)
			if err != nil {
				return -1, nil, fmt.Errorf("server: %s address %q: %w", network, addr, err)
			}
			ip, port, zone = a.IP, a.Port, a.Zone
		} else {
			a, err := net.ResolveUDPAddr(network, addr)
			if err != nil {
				return -1, nil, fmt.Errorf("server: %s address %q: %w", network, addr, err)
			}
			ip, port, zone = a.IP, a.Port, a.Zone
			typ = unix.SOCK_DGRAM
		}
		if (ip == nil || ip.IsUnspecified()) && (network == "tcp" || network == "udp") && dualStack() {
			sa, family = &unix.SockaddrInet6{Port: port}, unix.AF_INET6 // [::], IPV6_V6ONLY off
		} else if ip4 := ip.To4(); network[len(network)-1] != '6' && (ip4 != nil || ip == nil) {
			a := &unix.SockaddrInet4{Port: port}
			copy(a.Addr[:], ip4)
			sa = a
		} else {
			a := &unix.SockaddrInet6{Port: port}
			copy(a.Addr[:], ip.To16())
			if zone != "" {
				if ifi, err := net.InterfaceByName(zone); err == nil {
					a.ZoneId = uint32(ifi.Index)
				}
			}
			sa, family = a, unix.AF_INET6
		}
	case "unix":
		if addr == "" {
			return -1, nil, fmt.Errorf("server: unix socket with an empty path")
		}
		sa, family = &unix.SockaddrUnix{Name: addr}, unix.AF_UNIX
	default:
		return -1, nil, fmt.Errorf("server: unknown network %q (known: tcp, tcp4, tcp6, unix, udp, udp4, udp6)", network)
	}
	if reuse == reuseFirst && family != unix.AF_UNIX {
		if err := claimFree(network, family, typ, sa); err != nil {
			why := ""
			if errors.Is(err, unix.EADDRINUSE) {
				why = " (another socket is bound there)"
			}
			return -1, nil, fmt.Errorf("server: bind %s %s: %w%s", network, addr, err, why)
		}
	}
	fd, err = unix.Socket(family, typ|sockFlags, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("server: socket for %s %s: %w", network, addr, err)
	}
	fail := func(what string, err error) (int, net.Addr, error) {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("server: %s %s %s: %w", what, network, addr, err)
	}
	if family != unix.AF_UNIX {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fail("SO_REUSEADDR on", err)
		}
		if reuse != reuseNone {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
				return fail("SO_REUSEPORT on", err)
			}
		}
		if err := setV6Only(fd, network, family); err != nil {
			return fail("IPV6_V6ONLY on", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if typ == unix.SOCK_STREAM {
		if err := unix.Listen(fd, 4096); err != nil {
			if family == unix.AF_UNIX {
				os.Remove(addr)
			}
			return fail("listen on", err)
		}
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname of", err)
	}
	return fd, sockaddrToNet(got, typ), nil
}

// claimFree tells whether sa is free for a socket of network without SO_REUSEPORT: it binds a
// probe socket there and closes it. A TCP probe has SO_REUSEADDR, as the listening socket has,
// so connections in TIME_WAIT do not count; a UDP probe has not, so that any socket bound there
// does. Port 0 is always free. It returns the errno of socket(2) or bind(2)
// (unix.EADDRINUSE when the address is taken).
func claimFree(network string, family, typ int, sa unix.Sockaddr) error {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		if a.Port == 0 {
			return nil
		}
	case *unix.SockaddrInet6:
		if a.Port == 0 {
			return nil
		}
	}
	fd, err := unix.Socket(family, typ|sockFlags, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if typ == unix.SOCK_STREAM {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return err
		}
	}
	if err := setV6Only(fd, network, family); err != nil {
		return err
	}
	return unix.Bind(fd, sa)
}

// setV6Only sets IPV6_V6ONLY on an AF_INET6 socket fd, as net.Listen does: on for "tcp6" and
// "udp6", off for "tcp" and "udp" (whose socket on [::] then takes IPv4 too, as ::ffff:a.b.c.d),
// whatever the sysctl net.ipv6.bindv6only says. Another family's socket is left alone.
func setV6Only(fd int, network string, family int) error {
	if family != unix.AF_INET6 {
		return nil
	}
	on := 0
	if network[len(network)-1] == '6' {
		on = 1
	}
	return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, on)
}

// dualStack reports whether this system has IPv6 sockets that take IPv4 too (IPV6_V6ONLY off),
// so that "tcp" and "udp" on a wildcard address listen on [::] for both, as net.Listen does;
// where it has not (no IPv6), they listen on 0.0.0.0. Probed once, as Go's net package does:
// a socket bound to ::ffff:127.0.0.1.
var dualStack = sync.OnceValue(func() bool {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|sockFlags, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0) != nil {
		return false
	}
	return unix.Bind(fd, &unix.SockaddrInet6{Addr: [16]byte{10: 0xff, 11: 0xff, 12: 127, 15: 1}}) == nil
})

// sockaddrToNet converts sa (of a socket of type typ) to a *net.TCPAddr, *net.UDPAddr or
// *net.UnixAddr; nil for another family.
func sockaddrToNet(sa unix.Sockaddr, typ int) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ip := net.IPv4(a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3])
		if typ == unix.SOCK_DGRAM {
			return &net.UDPAddr{IP: ip, Port: a.Port}
		}
		return &net.TCPAddr{IP: ip, Port: a.Port}
	case *unix.SockaddrInet6:
		ip := make(net.IP, net.IPv6len)
		copy(ip, a.Addr[:])
		zone := ""
		if a.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				zone = ifi.Name
			}
		}
		if typ == unix.SOCK_DGRAM {
			return &net.UDPAddr{IP: ip, Port: a.Port, Zone: zone}
		}
		return &net.TCPAddr{IP: ip, Port: a.Port, Zone: zone}
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: a.Name, Net: "unix"}
	}
	return nil
}

// acceptAgain tells accept4's errors that leave the listening socket usable at once (the next
// connection may be accepted) from the others.
func acceptAgain(err error) bool {
	return errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED)
}

// acceptBacklog accepts every connection waiting on listening socket lfd, for l (a shutdown
// serves them before it closes the listener).
func acceptBacklog(l *Loop, lfd int) {
	for {
		fd, err := accept4(lfd)
		if err != nil {
			if acceptAgain(err) {
				continue
			}
			return
		}
		l.accepted(fd)
	}
}
