//go:build unix

package ringev

// Socket addresses as the kernel reads them, for Connect.

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSockaddr writes sa into raw and returns its length.
func rawSockaddr(sa unix.Sockaddr, raw *unix.RawSockaddrAny) (uint32, error) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(raw))
		p.Family = unix.AF_INET
		p.Port = htons(uint16(a.Port))
		p.Addr = a.Addr
		return unix.SizeofSockaddrInet4, nil
	case *unix.SockaddrInet6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(raw))
		p.Family = unix.AF_INET6
		p.Port = htons(uint16(a.Port))
		p.Scope_id = a.ZoneId
		p.Addr = a.Addr
		return unix.SizeofSockaddrInet6, nil
	case *unix.SockaddrUnix:
		p := (*unix.RawSockaddrUnix)(unsafe.Pointer(raw))
		p.Family = unix.AF_UNIX
		if len(a.Name) >= len(p.Path) {
			return 0, fmt.Errorf("unix socket path of %d bytes: %w", len(a.Name), unix.EINVAL)
		}
		for i := 0; i < len(a.Name); i++ {
			p.Path[i] = int8(a.Name[i])
		}
		n := 2 + len(a.Name)
		if len(a.Name) > 0 && a.Name[0] == '@' {
			p.Path[0] = 0 // abstract
		} else if len(a.Name) > 0 {
			n++ // the terminating NUL
		}
		return uint32(n), nil
	}
	return 0, fmt.Errorf("address %T: %w", sa, unix.EAFNOSUPPORT)
}

// htons is the port in network byte order, as the kernel reads it from memory.
func htons(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	b[0], b[1] = byte(p>>8), byte(p)
	return p
}
