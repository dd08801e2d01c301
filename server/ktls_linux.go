//go:build linux

package server

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProbeKernelTLS reports whether this kernel has kernel TLS: it sets the "tls" upper-layer
// protocol (setsockopt TCP_ULP, Linux 4.13, CONFIG_TLS; see the kernel's
// Documentation/networking/tls.rst) on a connected loopback TCP socket. nil means it has it,
// so a TLS connection's records could go through the socket (TLS_TX, TLS_RX) once the
// handshake has ended; ringev runs them on the loop either way (TLS 1.3's its own, TLS 1.2's
// crypto/tls's). Errors: one naming
// TCP_ULP "tls" and wrapping the errno (unix.ENOENT: the kernel has no TLS module), or the
// loopback connection's.
func ProbeKernelTLS() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("server: kernel TLS probe: %w", err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return fmt.Errorf("server: kernel TLS probe: %w", err)
	}
	defer c.Close()
	sc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return fmt.Errorf("server: kernel TLS probe: %w", err)
	}
	var serr error
	if err := sc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_ULP, "tls")
	}); err != nil {
		return fmt.Errorf("server: kernel TLS probe: %w", err)
	}
	if serr != nil {
		why := ""
		if serr == syscall.ENOENT {
			why = " (no TLS module: CONFIG_TLS)"
		}
		return fmt.Errorf("server: setsockopt TCP_ULP \"tls\"%s: %w", why, serr)
	}
	return nil
}
