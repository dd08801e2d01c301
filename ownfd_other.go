//go:build !linux

package ringev

// backendOwnsFd: only the Linux backends have fds of their own beyond the epoll set.
func (l *Loop) backendOwnsFd(int) bool { return false }
