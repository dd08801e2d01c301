//go:build linux

package fileio_test

// Helpers shared by the fileio tests: rings and files that close themselves when the test
// ends, skips that name the kernel feature missing, and waits with deadlines.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
	"github.com/ringev/ringev/internal/testutil"
)

// waitTimeout bounds every wait of a test.
const waitTimeout = 10 * time.Second

// hangTimeout bounds a whole test that makes a ring, its cleanups (the rings' Close) included:
// a test still running then has hung in a wait that has no deadline of its own (Close, or an
// owner that never wakes), and the test binary fails with every goroutine's stack instead of
// stalling until go test's -timeout.
const hangTimeout = time.Minute

// ringModes are the modes each operation is tested in.
var ringModes = []fileio.Mode{fileio.ModePlain, fileio.ModeDeferTaskrun, fileio.ModeSQPoll, fileio.ModeDeputy,
	fileio.ModeNetpoll, fileio.ModeThreads}

// newRing starts a ring with opts, closed at the end of the test. A test that asks for a mode
// first skips through requireMode where the kernel lacks it; here any error fails the test.
// After the test's rings are closed, checkLeaks fails it if they left an fd or a goroutine.
func newRing(t testing.TB, opts ...fileio.Option) *fileio.Ring {
	t.Helper()
	checkLeaks(t)
	r, err := fileio.NewRing(opts...)
	if err != nil {
		t.Fatalf("NewRing: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Ring.Close: %v", err)
		}
	})
	return r
}

// leakChecked holds the tests checkLeaks has set up a check for.
var leakChecked sync.Map

// checkLeaks, on its first call in a test, notes the open fds and the running goroutines and
// registers a cleanup that runs after those registered later (the Close of every ring made
// since): it fails the test if an fd opened since is still open or a goroutine started since
// still runs (goleak retries for a while, for goroutines on their way out). Until that cleanup
// ends, watchHang guards the test.
func checkLeaks(t testing.TB) {
	t.Helper()
	if _, done := leakChecked.LoadOrStore(t, true); done {
		return
	}
	fds := testutil.OpenFds(t)
	goroutines := goleak.IgnoreCurrent()
	watchHang(t)
	t.Cleanup(func() {
		leakChecked.Delete(t)
		if left := testutil.FdsSince(t, fds); len(left) > 0 {
			t.Errorf("fds %v left open after the test's rings were closed", left)
		}
		if err := goleak.Find(goroutines); err != nil {
			t.Errorf("after the test's rings were closed: %v", err)
		}
	})
}

// watchHang ends the test binary with every goroutine's stack if t and its cleanups (those
// registered after this call) are not done within hangTimeout. Tests that make a ring get it
// through newRing; a test that makes one with fileio.NewRing calls it first.
func watchHang(t testing.TB) {
	t.Helper()
	watchdog := time.AfterFunc(hangTimeout, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("%s: not done after %v: a wait without a deadline hangs", t.Name(), hangTimeout))
	})
	t.Cleanup(func() { watchdog.Stop() })
}

// forModes runs test once per mode of ringModes, each as a subtest with its own ring; a mode
// the kernel lacks is skipped (requireMode).
func forModes(t *testing.T, test func(t *testing.T, r *fileio.Ring), opts ...fileio.Option) {
	for _, m := range ringModes {
		t.Run(string(m), func(t *testing.T) {
			requireMode(t, m)
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

// awaitErrs takes n results from errs within timeout and fails the test on the first error
// or at the deadline.
func awaitErrs(t testing.TB, what string, errs <-chan error, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-deadline:
			t.Fatalf("%s: not done after %v", what, timeout)
		}
	}
}

// timeAfter is the channel of the test deadline.
func timeAfter() <-chan time.Time { return time.After(waitTimeout) }

// The skip helpers, one per kernel feature. Each probes once per test binary, skips naming the
// feature where the kernel lacks it, and fails the test on any other error: a skip is never a
// failure in disguise.

// probe is the cached outcome of one feature probe: skip says why the feature is missing.
type probe struct {
	once sync.Once
	skip string
	err  error
}

// check runs f once (its skip reason, or an unexpected error) and skips or fails t by it.
func (p *probe) check(t testing.TB, f func() (skip string, err error)) {
	t.Helper()
	p.once.Do(func() { p.skip, p.err = f() })
	if p.err != nil {
		t.Fatalf("probing: %v", p.err)
	}
	if p.skip != "" {
		t.Skip(p.skip)
	}
}

// probeMode sets up a ring in mode m and closes it; errnos are the setup errors that mean the
// kernel lacks feature.
func probeMode(m fileio.Mode, feature string, errnos ...unix.Errno) (string, error) {
	r, err := fileio.NewRing(fileio.WithMode(m))
	for _, e := range errnos {
		if errors.Is(err, e) {
			return fmt.Sprintf("%s unavailable here: %v", feature, err), nil
		}
	}
	if err != nil {
		return "", err
	}
	return "", r.Close()
}

var ioUringProbe, deferTaskrunProbe, sqPollProbe, registeredFilesProbe probe

// requireIoUring skips the test where io_uring cannot be used at all (ENOSYS: no io_uring in
// the kernel; EPERM: kernel.io_uring_disabled or a seccomp policy).
func requireIoUring(t testing.TB) {
	t.Helper()
	ioUringProbe.check(t, func() (string, error) {
		return probeMode(fileio.ModePlain, "io_uring (switched off or missing)", unix.ENOSYS, unix.EPERM)
	})
}

// requireDeferTaskrun skips the test where the kernel refuses IORING_SETUP_DEFER_TASKRUN with
// SINGLE_ISSUER (Linux 6.1; EINVAL before).
func requireDeferTaskrun(t testing.TB) {
	t.Helper()
	requireIoUring(t)
	deferTaskrunProbe.check(t, func() (string, error) {
		return probeMode(fileio.ModeDeferTaskrun, "IORING_SETUP_DEFER_TASKRUN (Linux 6.1)", unix.EINVAL)
	})
}

// requireSQPoll skips the test where the kernel refuses IORING_SETUP_SQPOLL (Linux 5.1; without
// privileges, 5.11: EPERM before; EINVAL where the flag is unknown).
func requireSQPoll(t testing.TB) {
	t.Helper()
	requireIoUring(t)
	sqPollProbe.check(t, func() (string, error) {
		return probeMode(fileio.ModeSQPoll, "IORING_SETUP_SQPOLL (Linux 5.1, 5.11 unprivileged)", unix.EINVAL, unix.EPERM)
	})
}

// requireMode skips the test where the kernel lacks what mode m needs: nothing for
// ModeThreads, io_uring for ModePlain and ModeNetpoll, and the setup flag of the others.
func requireMode(t testing.TB, m fileio.Mode) {
	t.Helper()
	switch m {
	case fileio.ModeThreads:
	case fileio.ModePlain, fileio.ModeNetpoll:
		requireIoUring(t)
	case fileio.ModeDeferTaskrun:
		requireDeferTaskrun(t)
	case fileio.ModeSQPoll, fileio.ModeDeputy:
		requireSQPoll(t)
	default:
		t.Fatalf("requireMode: unknown mode %q", m)
	}
}

// requireRegisteredFiles skips the test where a ring cannot keep a registered-file table
// (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE, Linux 5.19): a file opened on a
// ring WithRegisteredFiles(true) is then not Registered.
func requireRegisteredFiles(t testing.TB) {
	t.Helper()
	requireIoUring(t)
	registeredFilesProbe.check(t, func() (string, error) {
		r, err := fileio.NewRing(fileio.WithMode(fileio.ModePlain), fileio.WithRegisteredFiles(true))
		if err != nil {
			return "", err
		}
		defer r.Close()
		f, err := r.Open(os.DevNull, os.O_RDONLY, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if !f.Registered() {
			return "the registered-file table (IORING_REGISTER_FILES2 sparse, Linux 5.19) is unavailable here", nil
		}
		return "", nil
	})
}

// registerBuffers registers n buffers of size on r; it skips the test where the kernel refuses
// to pin them (testutil.SkipIfFixedBuffersRefused) and fails it on any other error.
func registerBuffers(t testing.TB, r *fileio.Ring, n, size int) []fileio.FixedBuffer {
	t.Helper()
	bufs, err := r.RegisterBuffers(n, size)
	testutil.SkipIfFixedBuffersRefused(t, err)
	if err != nil {
		t.Fatalf("RegisterBuffers(%d, %d): %v", n, size, err)
	}
	return bufs
}

// hugeBuffer returns n bytes of anonymous memory reserved but not backed (MAP_NORESERVE: only
// the pages written take memory), unmapped when the test ends; it skips where an int cannot
// hold n.
func hugeBuffer(t testing.TB, n uint64) []byte {
	t.Helper()
	if n > uint64(^uint(0)>>1) {
		t.Skipf("a %d-byte buffer does not fit an int here", n)
	}
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		t.Fatalf("mmap of %d bytes: %v", n, err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}
