package ringev

// backendOwnsFd reports whether fd is the backend's io_uring instance.
func (l *Loop) backendOwnsFd(fd int) bool {
	switch b := l.be.(type) {
	case *uringBackend:
		return b.ring != nil && fd == b.ring.Fd()
	case *uringPollBackend:
		return b.ring != nil && fd == b.ring.Fd()
	}
	return false
}
