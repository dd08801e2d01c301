//go:build linux

package fileio_test

// Helpers shared by the fileio tests: rings and files that close themselves when the test
// ends, skips that name the kernel feature missing, and waits with deadlines.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
)

// waitTimeout bounds every wait of a test.
const waitTimeout = 10 * time.Second

// ringModes are the modes each operation is tested in.
var ringModes = []fileio.Mode{fileio.ModePlain, fileio.ModeDeferTaskrun, fileio.ModeSQPoll, fileio.ModeDeputy,
	fileio.ModeThreads}

// newRing starts a ring with opts, closed at the end of the test; a mode the kernel refuses
// skips the test, naming the feature.
func newRing(t testing.TB, opts ...fileio.Option) *fileio.Ring {
	t.Helper()
	r, err := fileio.NewRing(opts...)
	if err != nil {
		skipIfUnsupported(t, err)
		t.Fatalf("NewRing: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Ring.Close: %v", err)
		}
	})
	return r
}

// skipIfUnsupported skips the test when err says io_uring, or the mode's feature, is missing
// here (ENOSYS, EPERM, EINVAL from io_uring_setup).
func skipIfUnsupported(t testing.TB, err error) {
	t.Helper()
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		t.Skipf("io_uring unavailable here: %v", err)
	case errors.Is(err, unix.EINVAL):
		t.Skipf("the kernel refuses this ring's setup flags: %v", err)
	}
}

// forModes runs test once per mode of ringModes, each as a subtest with its own ring.
func forModes(t *testing.T, test func(t *testing.T, r *fileio.Ring), opts ...fileio.Option) {
	for _, m := range ringModes {
		t.Run(string(m), func(t *testing.T) {
			test(t, newRing(t, append([]fileio.Option{fileio.WithMode(m)}, opts...)...))
		})
	}
}

// tempFile writes data to a new file in the test's directory and returns its path.
func tempFile(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// openFile opens path on r with flag.
func openFile(t testing.TB, r *fileio.Ring, path string, flag int) *fileio.File {
	t.Helper()
	f, err := r.Open(path, flag, 0o644)
	if err != nil {
		t.Fatalf("Open %s: %v", path, err)
	}
	return f
}

// pattern returns n bytes that differ at every offset modulo 251.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// skipUnlessDirect skips the test when the file system of dir refuses O_DIRECT (tmpfs does).
func skipUnlessDirect(t testing.TB, dir string) {
	t.Helper()
	p := filepath.Join(dir, "direct-probe")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|unix.O_DIRECT, 0o644)
	if err != nil {
		t.Skipf("O_DIRECT unsupported in %s: %v", dir, err)
	}
	f.Close()
	os.Remove(p)
}

// skipUnlessSQPoll skips the test when an SQPOLL ring cannot be set up here
// (IORING_SETUP_SQPOLL, Linux 5.1; 5.11 without privileges).
func skipUnlessSQPoll(t testing.TB) {
	t.Helper()
	r, err := fileio.NewRing(fileio.WithMode(fileio.ModeSQPoll))
	if err != nil {
		t.Skipf("IORING_SETUP_SQPOLL unavailable: %v", err)
	}
	r.Close()
}

// skipUnlessIoUring skips the test when io_uring cannot be used here.
func skipUnlessIoUring(t testing.TB) {
	t.Helper()
	r, err := fileio.NewRing(fileio.WithMode(fileio.ModePlain))
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	r.Close()
}

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// result is what a call that may block returns.
type result struct {
	n   int
	err error
}

// async runs f on a new goroutine and returns a channel for its result.
func async(f func() (int, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		n, err := f()
		ch <- result{n, err}
	}()
	return ch
}

// await returns what ch delivers, failing the test at the deadline.
func await(t testing.TB, what string, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		t.Fatalf("%s: did not return within %v", what, waitTimeout)
		return result{}
	}
}

// pipeFile returns the read end of a new pipe adopted by r, and the write end.
func pipeFile(t testing.TB, r *fileio.Ring) (*fileio.File, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pw.Close() })
	f, err := r.Adopt(pr)
	if err != nil {
		pr.Close()
		t.Fatalf("Adopt: %v", err)
	}
	return f, pw
}

// openFds counts the process's open file descriptors.
func openFds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// timeAfter is the channel of the test deadline.
func timeAfter() <-chan time.Time { return time.After(waitTimeout) }
