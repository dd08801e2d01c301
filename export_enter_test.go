package ringev

// BlockingEnters returns how many waiting io_uring_enter(2) calls l's uring backend made in its
// waits (0 on another backend).
func BlockingEnters(l *Loop) uint64 {
	if b, ok := l.be.(*uringBackend); ok {
		return b.blocking
	}
	return 0
}
