//go:build linux

package testutil

import (
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// LeakWait is how long NoLeaks waits for goroutines and fds on their way out (a close on
// another goroutine) before it fails the test.
const LeakWait = 10 * time.Second

var warmOnce sync.Once

// NoLeaks makes the test fail, when it has ended and its cleanups have run, if a goroutine
// (goleak) or an fd (FdsSince) opened during it is still there after LeakWait. Call it first,
// so that its check runs after the other cleanups. The runtime's netpoller opens its fds at the
// process's first dial: a dial is made before the first count, so that they are not taken for
// the test's.
func NoLeaks(t testing.TB) {
	t.Helper()
	warmOnce.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
				c.Close()
			}
			l.Close()
		}
	})
	ignore := goleak.IgnoreCurrent()
	before := OpenFds(t)
	t.Cleanup(func() {
		goleak.VerifyNone(t, ignore)
		left := FdsSince(t, before)
		for deadline := time.Now().Add(LeakWait); len(left) > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // the pace of the polling
			left = FdsSince(t, before)
		}
		if len(left) > 0 {
			named := make([]string, len(left))
			for i, fd := range left {
				what, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
				named[i] = strconv.Itoa(fd) + " -> " + what
			}
			t.Errorf("fds left open: %v", named)
		}
	})
}
