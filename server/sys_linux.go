package server

import "golang.org/x/sys/unix"

// sockFlags makes an accepted or new socket non-blocking and close-on-exec in the same call
// (SOCK_NONBLOCK|SOCK_CLOEXEC); sys_other.go has the same names off Linux.
const sockFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC

// accept4 is accept4(2) with sockFlags.
func accept4(fd int) (int, error) {
	nfd, _, err := unix.Accept4(fd, sockFlags)
	return nfd, err
}
