//go:build linux

package ringev

// SetRideWindow makes l's measuring windows (ride.go) runs fd handler runs long instead of
// rideWindow; with flip, every window end switches the path of the handlers' I/O whatever it
// cost. It does nothing on a loop that does not measure (another backend, a forced path).
func SetRideWindow(l *Loop, runs uint64, flip bool) {
	if l.ride == nil || !l.ride.ctl.auto {
		return
	}
	l.ride.ctl.window, l.ride.ctl.flip = runs, flip
}

// RideWindows returns how many measuring windows l has run on each path (ring, syscall).
func RideWindows(l *Loop) (ring, syscall uint64) {
	if l.ride == nil {
		return 0, 0
	}
	w := l.ride.ctl.dec.windows
	return w[pathRing], w[pathSyscall]
}
