//go:build unix && !linux

package ringev

// msgWake is the uring backend's MSG_RING wake-up (crossloop_uring_linux.go): none here.
func (l *Loop) msgWake(*Loop) bool { return false }
