package ringev

// ownsFd reports whether fd is one of the loop's own fds: its wake-up eventfd, its epoll set,
// the eventfds of its internal slots, or its backend's (an io_uring instance). CloseFd refuses
// them, as AddFd refuses the internal slots: a wrong number must not close the loop's insides.
func (l *Loop) ownsFd(fd int) bool {
	if fd == l.wakeFd || l.epfd >= 0 && fd == l.epfd {
		return true
	}
	if uint(fd) < uint(len(l.slots)) && l.slots[fd] != nil && l.slots[fd].internal {
		return true
	}
	return l.backendOwnsFd(fd)
}
