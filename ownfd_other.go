//go:build unix && !linux

package ringev

// backendFd: only the Linux backends have fds of their own beyond the epoll set.
func backendFd(backend) int { return -1 }
