//go:build linux

package bench

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func getNofile(t *testing.T) unix.Rlimit {
	t.Helper()
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestParseFdMany: fd_many<N> with a plain decimal N in [1, MaxFds], nothing else.
func TestParseFdMany(t *testing.T) {
	for shape, want := range map[string]int{"fd_many1": 1, "fd_many100": 100, "fd_many10000": 10000, "fd_many1000000": MaxFds} {
		if n, ok := parseFdMany(shape); !ok || n != want || FdManyShape(n) != shape {
			t.Errorf("%s: %d, %v; want %d, true", shape, n, ok, want)
		}
	}
	for _, shape := range []string{"fd_many", "fd_many0", "fd_many007", "fd_many+5", "fd_many-1", "fd_many1e3", "fd_many1000001", "fd_speed1", "xfd_many3"} {
		if n, ok := parseFdMany(shape); ok {
			t.Errorf("%s: accepted as %d", shape, n)
		}
	}
}

// TestFdManyRestoresLimitAndFds: an fd_many run with a soft RLIMIT_NOFILE too low for it raises
// the limit, measures without spurious calls, then restores the limit and closes every fd.
func TestFdManyRestoresLimitAndFds(t *testing.T) {
	requireBackend(t, RatioBase)
	orig := getNofile(t)
	open := uint64(openFds(t))
	low := unix.Rlimit{Cur: open + 20, Max: orig.Max}
	if low.Cur+200 > orig.Max {
		t.Skipf("hard RLIMIT_NOFILE %d too low for this test", orig.Max)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &orig) })
	for _, backend := range []string{RatioBase, Netpoller} {
		before := openFds(t)
		r, err := RunPipes(backend, FdManyShape(120), Options{Events: 200})
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		if r.Fds != 120 || r.Spurious != 0 || r.Events != 200 {
			t.Errorf("%s: fds %d, spurious %d, events %d; want 120, 0, 200", backend, r.Fds, r.Spurious, r.Events)
		}
		if got := getNofile(t); got != low {
			t.Errorf("%s: RLIMIT_NOFILE %+v after the run, want it restored to %+v", backend, got, low)
		}
		if after := openFds(t); after != before {
			t.Errorf("%s: open fds: %d before the run, %d after", backend, before, after)
		}
	}
}

// TestRaiseNofile: a need within the soft limit changes nothing, one above the hard limit is
// ErrTooManyFds with a message saying what to do, and leaves the limit alone.
func TestRaiseNofile(t *testing.T) {
	orig := getNofile(t)
	restore, err := raiseNofile(orig.Cur)
	if err != nil {
		t.Fatal(err)
	}
	if err := restore(); err != nil || getNofile(t) != orig {
		t.Errorf("a need within the limit changed it: %+v, %v", getNofile(t), err)
	}
	if orig.Max == unix.RLIM_INFINITY {
		t.Skip("no hard limit")
	}
	_, err = raiseNofile(orig.Max + 1)
	if !errors.Is(err, ErrTooManyFds) || !strings.Contains(err.Error(), "hard limit") {
		t.Errorf("need above the hard limit: err = %v, want ErrTooManyFds naming the hard limit", err)
	}
	if getNofile(t) != orig {
		t.Errorf("a failed raise changed the limit to %+v", getNofile(t))
	}
}

// TestIdlePipesNeverReady: the idle pipes report nothing to poll(2): no data, no hang-up.
func TestIdlePipesNeverReady(t *testing.T) {
	fds, err := idlePipes(3)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFds(fds)
	pfd := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfd[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI}
	}
	n, err := unix.Poll(pfd, 10)
	if err != nil || n != 0 {
		t.Errorf("poll: %d ready, %v; want none (%+v)", n, err, pfd)
	}
}
