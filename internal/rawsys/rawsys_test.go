//go:build linux

package rawsys_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/ringev/ringev/internal/rawsys"
	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// pipe is testutil.Pipe as the two fds of pipe(2).
func pipe(t *testing.T) [2]int {
	r, w := testutil.Pipe(t)
	return [2]int{r, w}
}

// TestSyscallReturnsResult: a write and a read through Syscall return the byte counts and the bytes.
func TestSyscallReturnsResult(t *testing.T) {
	p := pipe(t)
	in := []byte("ringev")
	n, e := rawsys.Syscall(unix.SYS_WRITE, uintptr(p[1]), uintptr(unsafe.Pointer(&in[0])), uintptr(len(in)))
	if e != 0 || n != uintptr(len(in)) {
		t.Fatalf("write: n %d errno %v, want %d, 0", n, e, len(in))
	}
	out := make([]byte, 16)
	n, e = rawsys.Syscall(unix.SYS_READ, uintptr(p[0]), uintptr(unsafe.Pointer(&out[0])), uintptr(len(out)))
	if e != 0 || string(out[:n]) != "ringev" {
		t.Fatalf("read: %q errno %v, want %q, 0", out[:n], e, "ringev")
	}
}

// TestSyscallReturnsErrno: a failing call returns -1 and the errno, which errors.Is matches.
func TestSyscallReturnsErrno(t *testing.T) {
	p := pipe(t)
	var b [1]byte
	n, e := rawsys.Syscall(unix.SYS_READ, uintptr(p[0]), uintptr(unsafe.Pointer(&b[0])), 1)
	if n != ^uintptr(0) || !errors.Is(e, unix.EAGAIN) {
		t.Fatalf("read of an empty pipe: n %d errno %v, want -1, EAGAIN", n, e)
	}
	_, e = rawsys.Syscall(unix.SYS_CLOSE, ^uintptr(0), 0, 0)
	if e != unix.EBADF {
		t.Fatalf("close(-1): errno %v, want EBADF", e)
	}
}

// TestSyscall6PassesSixArguments: mmap(2) through Syscall6, whose six arguments all matter, maps
// the second page of a memfd (fd in the fifth, offset in the sixth) and shows its byte, and an
// unaligned offset fails with EINVAL.
func TestSyscall6PassesSixArguments(t *testing.T) {
	fd, err := unix.MemfdCreate("rawsys", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	page := make([]byte, 2*4096)
	page[4096] = 42
	if _, err := unix.Pwrite(fd, page, 0); err != nil {
		t.Fatal(err)
	}
	addr, e := rawsys.Syscall6(unix.SYS_MMAP, 0, 4096, unix.PROT_READ, unix.MAP_SHARED, uintptr(fd), 4096)
	if e != 0 {
		t.Fatalf("mmap of the memfd's second page: %v", e)
	}
	// The mapping's first byte, copied out by write(2) (no Go pointer to a foreign mapping).
	p := pipe(t)
	_, we := rawsys.Syscall(unix.SYS_WRITE, uintptr(p[1]), addr, 1)
	unix.Syscall(unix.SYS_MUNMAP, addr, 4096, 0)
	var got [1]byte
	if we != 0 {
		t.Fatalf("write from the mapping: %v", we)
	}
	if _, err := unix.Read(p[0], got[:]); err != nil {
		t.Fatal(err)
	}
	if got[0] != 42 {
		t.Fatalf("the mapped page starts with %d, want 42 (wrong fd or offset passed)", got[0])
	}
	if _, e := rawsys.Syscall6(unix.SYS_MMAP, 0, 4096, unix.PROT_READ, unix.MAP_SHARED, uintptr(fd), 1); e != unix.EINVAL {
		t.Fatalf("mmap at offset 1: errno %v, want EINVAL", e)
	}
}

// TestSyscall6Ppoll: ppoll(2) through Syscall6 with a zero timespec and a nil sigmask reports
// the one ready fd and its revents.
func TestSyscall6Ppoll(t *testing.T) {
	p := pipe(t)
	fds := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}, {Fd: int32(p[1]), Events: unix.POLLOUT}}
	var ts unix.Timespec
	n, e := rawsys.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(&ts)), 0, 8, 0)
	if e != 0 || n != 1 || fds[1].Revents&unix.POLLOUT == 0 || fds[0].Revents != 0 {
		t.Fatalf("ppoll: n %d errno %v revents %#x %#x, want 1 ready (the write end)", n, e, fds[0].Revents, fds[1].Revents)
	}
}

// BenchmarkPipeRoundTrip compares a one-byte write and read on a pipe through rawsys.Syscall
// with the same through unix.RawSyscall (one op = two syscalls).
func BenchmarkPipeRoundTrip(b *testing.B) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var buf [1]byte
	ptr := uintptr(unsafe.Pointer(&buf[0]))
	b.Run("rawsys", func(b *testing.B) {
		for b.Loop() {
			rawsys.Syscall(unix.SYS_WRITE, uintptr(p[1]), ptr, 1)
			rawsys.Syscall(unix.SYS_READ, uintptr(p[0]), ptr, 1)
		}
	})
	b.Run("unix.RawSyscall", func(b *testing.B) {
		for b.Loop() {
			unix.RawSyscall(unix.SYS_WRITE, uintptr(p[1]), ptr, 1)
			unix.RawSyscall(unix.SYS_READ, uintptr(p[0]), ptr, 1)
		}
	})
}
