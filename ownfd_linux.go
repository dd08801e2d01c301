package ringev

// backendFd returns the fd of be's io_uring instance, or -1 for a backend without one; the
// ring is made with the backend and lives as long as it.
func backendFd(be backend) int {
	switch b := be.(type) {
	case *uringBackend:
		if b.ring != nil {
			return b.ring.Fd()
		}
	case *uringPollBackend:
		if b.ring != nil {
			return b.ring.Fd()
		}
	}
	return -1
}
