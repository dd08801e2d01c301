//go:build unix

package ringev

// ownsFd reports whether fd is one of the loop's own fds: its wake-up eventfd, its epoll set,
// the eventfds of its internal slots, or its backend's (an io_uring instance). CloseFd refuses
// them, as AddFd refuses the internal slots: a wrong number must not close the loop's insides.
func (l *Loop) ownsFd(fd int) bool {
	if fd < 0 {
		return false
	}
	if fd == l.wakeFd || fd == l.epfd || fd == l.beFd {
		return true
	}
	return uint(fd) < uint(len(l.slots)) && l.slots[fd] != nil && l.slots[fd].internal
}

// markInternal makes s the slot of one of the loop's own fds (ownsFd). Every internal slot is
// made through it: it tells the requests' fast check, which remembers per fd number that
// ownsFd was false (reqFd.okSeq), to ask again.
func (l *Loop) markInternal(s *fdSlot) {
	s.internal = true
	if l.rs != nil {
		l.rs.ownSeq++
	}
}
