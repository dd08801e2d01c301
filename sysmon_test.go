//go:build linux

package ringev_test

// The Go runtime's monitor (sysmon) and a loop that keeps blocking in short waits (once.go,
// yieldBeforeBlock): the loop returns to the scheduler every few ms, so the monitor never finds
// its goroutine on one time slice for 10 ms in a syscall, never takes its P away, and sleeps long.

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev"
)

// sysmonRun is how long the test's loop goes from one short timer wait to the next.
const sysmonRun = 300 * time.Millisecond

// sysmonTries is how many runs of sysmonRun the test makes before it fails.
const sysmonTries = 3

// othersSwitches sums voluntary_ctxt_switches of every thread of this process but tid
// (/proc/self/task/*/status). A thread that exits meanwhile is left out.
func othersSwitches(t *testing.T, tid int) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("listing /proc/self/task: %v (%d threads)", err, len(dirs))
	}
	sum := 0
	for _, d := range dirs {
		if filepath.Base(d) == strconv.Itoa(tid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue // exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					t.Fatalf("%s/status: %q: %v", d, line, err)
				}
				sum += n
			}
		}
	}
	return sum
}

// TestShortBlockingWaitsLeaveTheRuntimeMonitorAsleep: a loop that waits on a 100 µs timer again
// and again for 300 ms (every wait blocks in the backend's syscall) makes the process's other
// threads (the runtime's monitor above all) switch far fewer times than it waits, in one of up to
// three runs. Without the
// loop's yields the monitor takes the loop's P every 10 ms and then ticks every 20 µs for a
// millisecond: about as many switches as 100 µs waits.
func TestShortBlockingWaitsLeaveTheRuntimeMonitorAsleep(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2: with one P the runtime's monitor takes a P blocked in a syscall after 20 µs, whatever the loop does")
	}
	eachBackend(t, withFallback(), func(t *testing.T, backend string) {
		l := newLoop(t, backend)
		tid := unix.Gettid() // New locked this goroutine to its thread
		waits := 0
		var rearm func(*ringev.Timer)
		rearm = func(*ringev.Timer) { waits++; l.AddTimer(100*time.Microsecond, rearm) }
		l.AddTimer(100*time.Microsecond, rearm)
		runFor := func(d time.Duration) {
			for end := time.Now().Add(d); time.Now().Before(end); {
				if err := l.Once(); err != nil {
					t.Fatalf("Once: %v", err)
				}
			}
		}
		runFor(20 * time.Millisecond) // past the monitor's 10 ms time slice
		// Up to sysmonTries runs: on a loaded machine the loop's thread may be kept off its CPU
		// past the monitor's time slice now and then (the old behaviour for that run); without
		// the yield every run fails.
		for try := 1; ; try++ {
			before, w0 := othersSwitches(t, tid), waits
			runFor(sysmonRun)
			others, n := othersSwitches(t, tid)-before, waits-w0
			t.Logf("run %d: %d timer waits, %d voluntary switches of the other threads", try, n, others)
			if n < 200 {
				t.Fatalf("only %d timer waits of 100 µs in %v", n, sysmonRun)
			}
			if others*4 <= n {
				return
			}
			if try == sysmonTries {
				t.Errorf("in each of %d runs the other threads switched more than a quarter as often as the loop waited (last: %d times in %d short waits): the runtime's monitor keeps taking the loop's P", try, others, n)
				return
			}
		}
	})
}
