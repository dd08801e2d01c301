//go:build linux

package uring

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// underMemlockLimit makes the calling goroutine's thread a caller the kernel
// charges pinned io_uring memory to (CAP_IPC_LOCK dropped from the thread's
// effective set) and lowers the process's soft RLIMIT_MEMLOCK to limit bytes
// for the rest of the test. The thread stays locked and is never unlocked, so
// the Go runtime ends it with the test's goroutine and no other goroutine
// runs on it without the capability. The soft limit is restored at cleanup.
func underMemlockLimit(t *testing.T, limit uint64) {
	t.Helper()
	runtime.LockOSThread() // deliberately never unlocked: see above
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		t.Fatalf("capget: %v", err)
	}
	if caps[0].Effective&(1<<unix.CAP_IPC_LOCK) != 0 {
		caps[0].Effective &^= 1 << unix.CAP_IPC_LOCK
		if err := unix.Capset(&hdr, &caps[0]); err != nil {
			t.Fatalf("capset (drop CAP_IPC_LOCK): %v", err)
		}
	}
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old); err != nil {
		t.Fatalf("getrlimit(RLIMIT_MEMLOCK): %v", err)
	}
	if limit > old.Max {
		t.Fatalf("RLIMIT_MEMLOCK hard limit %d bytes is below the %d the test needs", old.Max, limit)
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Fatalf("setrlimit(RLIMIT_MEMLOCK, %d): %v", limit, err)
	}
	t.Cleanup(func() {
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old); err != nil {
			t.Errorf("restore RLIMIT_MEMLOCK: %v", err)
		}
	})
}

// TestSetupOverMemlockLimitNamesRLIMITMEMLOCK: io_uring_setup without
// CAP_IPC_LOCK under a 0-byte RLIMIT_MEMLOCK fails with ENOMEM (6.18 charges
// the ring's memory to it, as kernels before 5.12 did), and New's error names
// RLIMIT_MEMLOCK, its value and the missing CAP_IPC_LOCK while still wrapping
// ENOMEM. On a kernel that does not charge the ring there, the message is
// checked through memlockReason, which builds it, and the test says so.
func TestSetupOverMemlockLimitNamesRLIMITMEMLOCK(t *testing.T) {
	underMemlockLimit(t, 0)
	r, err := New(WithEntries(8))
	testutil.SkipIfIOUringUnavailable(t, err, "a ring")
	if err == nil {
		r.Close()
		t.Logf("this kernel does not charge ring memory to RLIMIT_MEMLOCK: setup succeeded under a 0-byte limit; " +
			"checking the error text through memlockReason only")
		why := memlockReason("ring memory", 0, false)
		if !strings.Contains(why, "RLIMIT_MEMLOCK") || !strings.Contains(why, "CAP_IPC_LOCK") {
			t.Errorf("memlockReason = %q, want RLIMIT_MEMLOCK and CAP_IPC_LOCK named", why)
		}
		return
	}
	if !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("New under a 0-byte RLIMIT_MEMLOCK: %v, want ENOMEM", err)
	}
	msg := err.Error()
	t.Logf("New: %v", err)
	for _, want := range []string{"RLIMIT_MEMLOCK", "0 bytes", "CAP_IPC_LOCK"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
}

// TestRegisterBuffersOverMemlockLimitNamesRLIMITMEMLOCK: a ring set up without
// CAP_IPC_LOCK under a 256 KiB RLIMIT_MEMLOCK; registering a 1 MiB fixed
// buffer, which the kernel pins and charges to the limit, fails with ENOMEM
// and the error names RLIMIT_MEMLOCK.
func TestRegisterBuffersOverMemlockLimitNamesRLIMITMEMLOCK(t *testing.T) {
	underMemlockLimit(t, 256<<10)
	r, err := New(WithEntries(8))
	testutil.SkipIfIOUringUnavailable(t, err, "a ring")
	if err != nil {
		t.Fatalf("New under a 256 KiB RLIMIT_MEMLOCK: %v", err)
	}
	defer r.Close()
	err = r.RegisterBuffers([][]byte{make([]byte, 1<<20)})
	if err == nil {
		t.Fatal("RegisterBuffers(1 MiB) under a 256 KiB RLIMIT_MEMLOCK without CAP_IPC_LOCK succeeded")
	}
	if !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("RegisterBuffers: %v, want ENOMEM", err)
	}
	t.Logf("RegisterBuffers: %v", err)
	if msg := err.Error(); !strings.Contains(msg, "RLIMIT_MEMLOCK") || !strings.Contains(msg, "262144 bytes") {
		t.Errorf("error %q does not name RLIMIT_MEMLOCK and its 262144 bytes", msg)
	}
}

// TestMemlockReasonNamesLimitAndCapability: the explanation names
// RLIMIT_MEMLOCK with its value (or "unlimited"), and whether CAP_IPC_LOCK
// exempts the caller.
func TestMemlockReasonNamesLimitAndCapability(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		cap   bool
		want  []string
	}{
		{0, false, []string{"RLIMIT_MEMLOCK", "0 bytes", "without CAP_IPC_LOCK", "ulimit -l"}},
		{65536, false, []string{"RLIMIT_MEMLOCK", "65536 bytes"}},
		{unix.RLIM_INFINITY, false, []string{"RLIMIT_MEMLOCK", "unlimited"}},
		{65536, true, []string{"RLIMIT_MEMLOCK", "65536 bytes", "CAP_IPC_LOCK is held"}},
	} {
		why := memlockReason("ring memory", tc.limit, tc.cap)
		for _, w := range tc.want {
			if !strings.Contains(why, w) {
				t.Errorf("memlockReason(%d, cap %v) = %q, want %q in it", tc.limit, tc.cap, why, w)
			}
		}
	}
}
