//go:build linux

package ringev_test

// Tests of WithExactSignals: every raise counted, one loop at a time, and the process's signal
// actions restored at Close.

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestExactSignalsCountEveryBackToBackRaise: With WithExactSignals, every raise of a signal at the
// loop's thread (raise(3): tgkill to the calling thread, delivered before tgkill returns) is
// counted, even 200 raised back to back before the loop looks, which os/signal would merge, as
// tevent counts them. (A signal sent to the process as a whole goes to a thread the kernel picks;
// the kernel itself merges a second one that arrives while the first is still pending there.)
func TestExactSignalsCountEveryBackToBackRaise(t *testing.T) {
	eachBackend(t, ringev.Backends(), func(t *testing.T, backend string) {
		requireExactSignals(t)
		l := newLoop(t, backend, ringev.WithExactSignals())
		counts := map[syscall.Signal]int{}
		for _, sig := range []syscall.Signal{unix.SIGUSR1, unix.SIGALRM} {
			if _, err := l.AddSignal(sig, func(s *ringev.Signal, n int) { counts[sig] += n }); err != nil {
				t.Fatal(err)
			}
		}
		const raises = 200
		pid, tid := unix.Getpid(), unix.Gettid() // New locked this goroutine to its thread
		for i := 0; i < raises; i++ {
			unix.Tgkill(pid, tid, unix.SIGUSR1)
			unix.Tgkill(pid, tid, unix.SIGALRM)
		}
		l.AddTimer(time.Hour, func(*ringev.Timer) {}) // Once waits rather than ending early
		until(t, l, func() bool {
			return counts[unix.SIGUSR1] >= raises && counts[unix.SIGALRM] >= raises
		})
		if counts[unix.SIGUSR1] != raises || counts[unix.SIGALRM] != raises {
			t.Fatalf("counted %v, want %d of each", counts, raises)
		}
	})
}

// TestExactSignalsWakeBlockedLoop: A blocked loop wakes for an exact signal raised from another
// goroutine.
func TestExactSignalsWakeBlockedLoop(t *testing.T) {
	requireExactSignals(t)
	l := newLoop(t, "uring", ringev.WithExactSignals())
	got := 0
	if _, err := l.AddSignal(unix.SIGUSR2, func(_ *ringev.Signal, n int) { got += n }); err != nil {
		t.Fatal(err)
	}
	far := false
	l.AddTimer(time.Hour, func(*ringev.Timer) { far = true }) // something to wait for
	testutil.WhenBlocked(t, unix.Gettid(), func() { unix.Kill(os.Getpid(), unix.SIGUSR2) })
	once(t, l) // a wait the signal did not end fails here
	if got != 1 || far {
		t.Fatalf("one Once: signal count %d, far timer ran %v; want the signal handler with count 1", got, far)
	}
}

// TestExactSignalsOneLoopAtATime: Only one loop of the process uses exact signals at a time; after
// it closes, another may.
func TestExactSignalsOneLoopAtATime(t *testing.T) {
	requireExactSignals(t)
	a := newLoop(t, "epoll", ringev.WithExactSignals())
	if _, err := a.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		b, err := ringev.New(ringev.WithBackend("epoll"), ringev.WithExactSignals())
		if err != nil {
			done <- err
			return
		}
		defer b.Close()
		_, err = b.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {})
		done <- err
	}()
	if err := <-done; !errors.Is(err, ringev.ErrExactSignalsInUse) {
		t.Fatalf("second exact-signal loop: %v, want ErrExactSignalsInUse", err)
	}
	a.Close()
	requireExactSignals(t)
	c := newLoop(t, "epoll", ringev.WithExactSignals())
	if _, err := c.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
		t.Fatalf("exact signals after the first loop closed: %v", err)
	}
}

// TestExactSignalsCloseRestoresOSSignal: Closing the exact-signal loop puts the Go runtime's
// handler back: os/signal receives the signal again.
func TestExactSignalsCloseRestoresOSSignal(t *testing.T) {
	requireExactSignals(t)
	l := newLoop(t, "epoll", ringev.WithExactSignals())
	if _, err := l.AddSignal(unix.SIGUSR1, func(*ringev.Signal, int) {}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGUSR1)
	defer signal.Stop(ch)
	unix.Kill(os.Getpid(), unix.SIGUSR1)
	select {
	case <-ch:
	case <-time.After(deadline):
		t.Fatal("os/signal got no SIGUSR1 after the exact-signal loop closed")
	}
}

// TestExactSignalsRefuseRuntimeSignals: WithExactSignals refuses the signals the Go runtime needs.
func TestExactSignalsRefuseRuntimeSignals(t *testing.T) {
	requireExactSignals(t)
	l := newLoop(t, "epoll", ringev.WithExactSignals())
	for _, sig := range []syscall.Signal{unix.SIGSEGV, unix.SIGURG, unix.SIGPROF, 32, 33} {
		if _, err := l.AddSignal(sig, func(*ringev.Signal, int) {}); err == nil {
			t.Errorf("AddSignal(%v) with exact signals: no error", sig)
		}
	}
}

// TestExactSignalsCloseKeepsActionInstalledMeanwhile: An action installed elsewhere while the loop
// held the signal (here signal.Ignore) is not overwritten when the loop closes: the process keeps
// ignoring the signal and survives it.
func TestExactSignalsCloseKeepsActionInstalledMeanwhile(t *testing.T) {
	requireExactSignals(t)
	l := newLoop(t, "epoll", ringev.WithExactSignals())
	if _, err := l.AddSignal(unix.SIGUSR2, func(*ringev.Signal, int) {}); err != nil {
		t.Fatal(err)
	}
	signal.Ignore(unix.SIGUSR2)
	defer signal.Reset(unix.SIGUSR2)
	l.Close()
	var cur [4]uint64 // struct sigaction: handler, flags, restorer, mask
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGUSR2), 0, uintptr(unsafe.Pointer(&cur[0])), 8, 0, 0); e != 0 {
		t.Fatal(e)
	}
	if cur[0] != 1 { // SIG_IGN
		t.Fatalf("SIGUSR2 action after Close: handler %#x, want SIG_IGN (1) as signal.Ignore set", cur[0])
	}
}
