//go:build linux

package uring

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFileOpenWriteReadSyncStatxClose: OPENAT, WRITE, WRITEV, FSYNC, READ, READV, STATX and CLOSE on a file.
func TestFileOpenWriteReadSyncStatxClose(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpStatx)
	path, err := unix.BytePtrFromString(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	prep(t, r, 1, func(s *SQE) { s.PrepOpenat(unix.AT_FDCWD, path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600) })
	c := collect(t, r, 1)[0]
	if c.Res < 0 {
		t.Fatalf("OPENAT Res %d", c.Res)
	}
	fd := int(c.Res)
	a, b := []byte("abc"), []byte("defg")
	iov := []unix.Iovec{{Base: &a[0]}, {Base: &b[0]}}
	iov[0].SetLen(3)
	iov[1].SetLen(4)
	prep(t, r, 2, func(s *SQE) { s.PrepWrite(fd, []byte("0123"), 0) }).SetFlags(SQEIOLink)
	prep(t, r, 3, func(s *SQE) { s.PrepWritev(fd, iov, 4) }).SetFlags(SQEIOLink)
	prep(t, r, 4, func(s *SQE) { s.PrepFsync(fd, FsyncDatasync) })
	m := byUserData(collect(t, r, 3))
	if m[2].Res != 4 || m[3].Res != 7 || m[4].Res != 0 {
		t.Fatalf("write/writev/fsync: %+v", m)
	}
	head := make([]byte, 4)
	x, y := make([]byte, 3), make([]byte, 4)
	riov := []unix.Iovec{{Base: &x[0]}, {Base: &y[0]}}
	riov[0].SetLen(3)
	riov[1].SetLen(4)
	var st unix.Statx_t
	prep(t, r, 5, func(s *SQE) { s.PrepRead(fd, head, 0) })
	prep(t, r, 6, func(s *SQE) { s.PrepReadv(fd, riov, 4) })
	prep(t, r, 7, func(s *SQE) { s.PrepStatx(unix.AT_FDCWD, path, 0, unix.STATX_SIZE, &st) })
	m = byUserData(collect(t, r, 3))
	if m[5].Res != 4 || m[6].Res != 7 || m[7].Res != 0 {
		t.Fatalf("read/readv/statx: %+v", m)
	}
	if string(head)+string(x)+string(y) != "0123abcdefg" || st.Size != 11 {
		t.Errorf("data %q%q%q size %d", head, x, y, st.Size)
	}
	prep(t, r, 8, func(s *SQE) { s.PrepClose(fd) })
	if c := collect(t, r, 1)[0]; c.Res != 0 {
		t.Errorf("CLOSE Res %d", c.Res)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		t.Errorf("fd %d still open after CLOSE", fd)
	}
}

// TestEpollCtlAddsWatch: EPOLL_CTL through the ring adds a pipe to an epoll set.
func TestEpollCtlAddsWatch(t *testing.T) {
	r := newTestRing(t)
	requireOp(t, r, OpEpollCtl)
	rfd, wfd := newPipe(t)
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	ev := &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(rfd)}
	prep(t, r, 1, func(s *SQE) { s.PrepEpollCtl(epfd, rfd, unix.EPOLL_CTL_ADD, ev) })
	if c := collect(t, r, 1)[0]; c.Res != 0 {
		t.Fatalf("EPOLL_CTL Res %d", c.Res)
	}
	unix.Write(wfd, []byte("x"))
	evs := make([]unix.EpollEvent, 1)
	if n, err := unix.EpollWait(epfd, evs, 1000); n != 1 || err != nil || evs[0].Fd != int32(rfd) {
		t.Errorf("epoll_wait = %d, %v, %+v", n, err, evs[0])
	}
}

// TestLinkCancelsChainButHardlinkDoesNot: after a failing request, an
// IO_LINK successor gets -ECANCELED while an IO_HARDLINK successor runs.
func TestLinkCancelsChainButHardlinkDoesNot(t *testing.T) {
	r := newTestRing(t)
	buf := make([]byte, 1)
	prep(t, r, 1, func(s *SQE) { s.PrepRead(-1, buf, 0) }).SetFlags(SQEIOLink)
	prep(t, r, 2, func(s *SQE) { s.PrepNop() })
	prep(t, r, 3, func(s *SQE) { s.PrepRead(-1, buf, 0) }).SetFlags(SQEIOHardlink)
	prep(t, r, 4, func(s *SQE) { s.PrepNop() })
	m := byUserData(collect(t, r, 4))
	if m[1].Res != errnoRes(unix.EBADF) || m[2].Res != errnoRes(unix.ECANCELED) {
		t.Errorf("link: %+v, want 1: -EBADF, 2: -ECANCELED", m)
	}
	if m[3].Res != errnoRes(unix.EBADF) || m[4].Res != 0 {
		t.Errorf("hardlink: %+v, want 3: -EBADF, 4: 0", m)
	}
}

// TestCQESkipSuccessPostsNothingOnSuccess: a NOP with CQE_SKIP_SUCCESS posts no CQE; a failing one does.
func TestCQESkipSuccessPostsNothingOnSuccess(t *testing.T) {
	r := newTestRing(t)
	requireFeature(t, r, FeatCQESkip)
	buf := make([]byte, 1)
	prep(t, r, 1, func(s *SQE) { s.PrepNop() }).SetFlags(SQECQESkipSuccess)
	prep(t, r, 2, func(s *SQE) { s.PrepRead(-1, buf, 0) }).SetFlags(SQECQESkipSuccess)
	prep(t, r, 3, func(s *SQE) { s.PrepNop() })
	m := byUserData(collect(t, r, 2))
	if _, ok := m[1]; ok {
		t.Errorf("skipped NOP posted %+v", m[1])
	}
	if m[2].Res != errnoRes(unix.EBADF) || m[3].Res != 0 {
		t.Errorf("results %+v", m)
	}
	expectNoCQE(t, r, 0)
}

// TestAsyncFlagStillCompletes: an IOSQE_ASYNC NOP, forced through io-wq, completes normally.
func TestAsyncFlagStillCompletes(t *testing.T) {
	r := newTestRing(t)
	prep(t, r, 1, func(s *SQE) { s.PrepNop() }).SetFlags(SQEAsync)
	if c := collect(t, r, 1)[0]; c.UserData != 1 || c.Res != 0 {
		t.Errorf("CQE %+v", c)
	}
}
