//go:build linux

package uring

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRegisterRingFdUsedByEnter: after RegisterRingFd, enter uses the
// registered index and NOPs still complete; unregistering goes back to the fd.
func TestRegisterRingFdUsedByEnter(t *testing.T) {
	r := newTestRing(t)
	if err := r.RegisterRingFd(); err != nil {
		skipWithoutRingFds(t, err)
		t.Fatal(err)
	}
	if !r.RingFdRegistered() || r.enterFlags != EnterRegisteredRing || r.enterFd == r.fd {
		t.Fatalf("enter does not use the registered index: fd %d enterFd %d flags %#x", r.fd, r.enterFd, r.enterFlags)
	}
	for i := 0; i < 3; i++ {
		prep(t, r, uint64(i), func(s *SQE) { s.PrepNop() })
		if c := collect(t, r, 1)[0]; c.UserData != uint64(i) {
			t.Errorf("CQE %+v", c)
		}
	}
	if err := r.UnregisterRingFd(); err != nil {
		t.Fatal(err)
	}
	if r.RingFdRegistered() || r.enterFd != r.fd {
		t.Error("still registered after UnregisterRingFd")
	}
}

// TestFixedFilesSparseAndUpdate: a sparse table filled by UpdateFiles serves a FIXED_FILE write.
func TestFixedFilesSparseAndUpdate(t *testing.T) {
	r := newTestRing(t)
	rfd, wfd := newPipe(t)
	if err := r.RegisterFilesSparse(4); err != nil {
		t.Fatal(err)
	}
	if n, err := r.UpdateFiles(2, []int32{int32(wfd)}); n != 1 || err != nil {
		t.Fatalf("UpdateFiles = %d, %v", n, err)
	}
	msg := []byte("fixed")
	prep(t, r, 1, func(s *SQE) { s.PrepWrite(2, msg, 0) }).AddFlags(SQEFixedFile)
	if c := collect(t, r, 1)[0]; c.Res != int32(len(msg)) {
		t.Fatalf("fixed-file write Res %d", c.Res)
	}
	buf := make([]byte, 16)
	if n, _ := unix.Read(rfd, buf); string(buf[:n]) != "fixed" {
		t.Errorf("pipe got %q", buf[:n])
	}
	if err := r.UnregisterFiles(); err != nil {
		t.Fatal(err)
	}
}

// TestFixedBuffersReadWrite: WRITE_FIXED and READ_FIXED move data through a registered buffer.
func TestFixedBuffersReadWrite(t *testing.T) {
	r := newTestRing(t)
	rfd, wfd := newPipe(t)
	buf := make([]byte, 4096)
	copy(buf, "registered")
	if err := r.RegisterBuffers([][]byte{buf}); err != nil {
		t.Fatal(err)
	}
	prep(t, r, 1, func(s *SQE) { s.PrepWriteFixed(wfd, buf[:10], 0, 0) })
	if c := collect(t, r, 1)[0]; c.Res != 10 {
		t.Fatalf("WRITE_FIXED Res %d", c.Res)
	}
	prep(t, r, 2, func(s *SQE) { s.PrepReadFixed(rfd, buf[100:200], 0, 0) })
	if c := collect(t, r, 1)[0]; c.Res != 10 || string(buf[100:110]) != "registered" {
		t.Fatalf("READ_FIXED Res %d data %q", c.Res, buf[100:110])
	}
	if err := r.UnregisterBuffers(); err != nil {
		t.Fatal(err)
	}
}

// TestEventfdSignalledOnCompletion: a registered eventfd counts posted CQEs.
func TestEventfdSignalledOnCompletion(t *testing.T) {
	r := newTestRing(t)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	if err := r.RegisterEventfd(efd, false); err != nil {
		t.Fatal(err)
	}
	prep(t, r, 1, func(s *SQE) { s.PrepNop() })
	collect(t, r, 1)
	var v [8]byte
	if n, err := unix.Read(efd, v[:]); n != 8 || err != nil || v[0] == 0 {
		t.Errorf("eventfd read = %d, %v, %v; want a count", n, err, v)
	}
	if err := r.UnregisterEventfd(); err != nil {
		t.Fatal(err)
	}
}

// TestSyncCancelWithTimeout: SyncCancel with a 1 s timeout cancels a pending
// poll before it returns, and reports ENOENT when nothing matches.
func TestSyncCancelWithTimeout(t *testing.T) {
	r := newTestRing(t)
	rfd, _ := newPipe(t)
	prep(t, r, 5, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
	prep(t, r, 6, func(s *SQE) { s.PrepPollAdd(rfd, unix.POLLIN) })
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.SyncCancel(5, -1, 0, time.Second); err != nil {
		if errors.Is(err, unix.EINVAL) {
			t.Skipf("IORING_REGISTER_SYNC_CANCEL (6.0): %v", err)
		}
		t.Fatalf("SyncCancel(5): %v", err)
	}
	if err := r.SyncCancel(0, rfd, AsyncCancelFd|AsyncCancelAll, time.Second); err != nil {
		t.Fatalf("SyncCancel(fd): %v", err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("sync cancels took %v", el)
	}
	m := byUserData(collect(t, r, 2))
	if m[5].Res != errnoRes(unix.ECANCELED) || m[6].Res != errnoRes(unix.ECANCELED) {
		t.Errorf("results %+v, want both -ECANCELED", m)
	}
	if err := r.SyncCancel(99, -1, 0, time.Second); !errors.Is(err, unix.ENOENT) {
		t.Errorf("SyncCancel(no match) = %v, want ENOENT", err)
	}
}

// TestRegisterErrorNamesTheCall: a failing register call names the opcode and wraps the errno.
func TestRegisterErrorNamesTheCall(t *testing.T) {
	r := newTestRing(t)
	err := r.UnregisterFiles()
	if !errors.Is(err, unix.ENXIO) || !strings.Contains(err.Error(), "IORING_UNREGISTER_FILES (5.1)") {
		t.Errorf("UnregisterFiles with none: %v, want ENXIO naming IORING_UNREGISTER_FILES", err)
	}
	_, err = r.doRegister(200, nil, 0)
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "opcode 200") {
		t.Errorf("unknown opcode: %v, want EINVAL naming opcode 200", err)
	}
}

// TestProbeAgreesWithWhatOpsDo: ops the probe reports supported run (NOP,
// EPOLL_WAIT), and the first opcode past LastOp, reported unsupported, fails with -EINVAL.
func TestProbeAgreesWithWhatOpsDo(t *testing.T) {
	r := newTestRing(t)
	p := requireProbe(t, r)
	if !p.OpSupported(OpNop) {
		t.Fatal("probe says NOP unsupported")
	}
	prep(t, r, 1, func(s *SQE) { s.PrepNop() })
	if c := collect(t, r, 1)[0]; c.Res != 0 {
		t.Errorf("NOP Res %d", c.Res)
	}
	// EPOLL_WAIT: the newest op the binding uses; its result must match the probe.
	rfd, wfd := newPipe(t)
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, rfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(rfd)})
	unix.Write(wfd, []byte("x"))
	events := make([]unix.EpollEvent, 2)
	prep(t, r, 2, func(s *SQE) { s.PrepEpollWait(epfd, events, 0) })
	c := collect(t, r, 1)[0]
	if got := c.Res != errnoRes(unix.EINVAL); got != p.OpSupported(OpEpollWait) {
		t.Errorf("EPOLL_WAIT Res %d but probe says supported=%v", c.Res, p.OpSupported(OpEpollWait))
	}
	past := p.LastOp() + 1
	if p.OpSupported(past) {
		t.Fatalf("probe says op %d (past LastOp) supported", past)
	}
	prep(t, r, 3, func(s *SQE) { s.Opcode = past })
	if c := collect(t, r, 1)[0]; c.Res != errnoRes(unix.EINVAL) {
		t.Errorf("op %d past LastOp: Res %d, want -EINVAL", past, c.Res)
	}
	if err := p.RequireOp(past); !errors.Is(err, unix.EOPNOTSUPP) || !errors.Is(err, ErrOpNotSupported) {
		t.Errorf("RequireOp(%d) = %v", past, err)
	}
}

// TestRegisteredRingFdWorksFromAnotherThread: a ring (without SINGLE_ISSUER) whose fd was
// registered on one thread still submits from another thread, which falls back to the plain fd.
func TestRegisteredRingFdWorksFromAnotherThread(t *testing.T) {
	r := newTestRing(t, WithFlags(0)) // locks this goroutine to its thread, skips without io_uring
	if err := r.RegisterRingFd(); err != nil {
		skipWithoutRingFds(t, err)
		t.Fatalf("RegisterRingFd: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // a thread of its own, which never used io_uring
		defer runtime.UnlockOSThread()
		s := r.GetSQE()
		s.PrepNop()
		s.SetUserData(42)
		_, err := r.SubmitAndWaitTimeout(1, 2*time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("submit from another thread with a registered ring fd: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("submit from another thread did not return")
	}
	if c := r.PeekCQE(); c == nil || c.UserData != 42 {
		t.Fatalf("CQE %+v, want user_data 42", c)
	}
}

// skipWithoutRingFds skips the test when err, from RegisterRingFd, says the kernel has no
// registered ring fds (IORING_REGISTER_RING_FDS, Linux 5.18: EINVAL).
func skipWithoutRingFds(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("IORING_REGISTER_RING_FDS (5.18): %v", err)
	}
}
