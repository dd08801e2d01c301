//go:build unix

package ringev

// Registered files: an fd's file in the ring's registered-file table (IOSQE_FIXED_FILE).

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// RegisterFile puts fd's file in the ring's registered-file table on the uring backend, at
// slot fd, so that the requests on fd made from now on carry IOSQE_FIXED_FILE (Linux 5.1): the
// kernel then neither looks fd up nor takes a reference on its file for every request. Each
// call costs one io_uring_register(2)
// (IORING_REGISTER_FILES_UPDATE, Linux 5.5); the first also makes the table, sparse, of
// min(RLIMIT_NOFILE, 65536) slots (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE,
// Linux 5.19), so RegisterFile needs Linux 5.19. See io_uring_register(2).
//
// The table holds a reference to the file: close fd with CloseFd (which empties the slot once
// fd's requests are done, then closes it) or an fd event's auto-close (which empties it first),
// or call UnregisterFile before close(2). A close(2) alone leaves the file open (a socket's peer
// sees no EOF, a pipe's writer no EPIPE) until UnregisterFile(fd) or Loop.Close (which empties
// the table before it returns), and the requests made on fd afterwards still reach that old
// file, even when a new file has taken the number. A second call for a registered fd does
// nothing (it does not put a new file of that number in the slot).
//
// On the other backends (epoll, poll, uring-poll: their requests make their own syscalls) it
// checks fd as below and does nothing else. Errors: ErrNotOwner, ErrClosed, ErrFdClosing while a
// CloseFd closes fd, an error wrapping unix.EBADF for a negative fd, one of the loop's own fds
// or one that names no open file; on uring also one wrapping unix.ERANGE for an fd at or above
// the table's size, and one wrapping the io_uring_register(2) errno otherwise, which names the
// operation: a kernel without sparse tables (before 5.19) gives unix.EINVAL and an error naming
// IORING_RSRC_REGISTER_SPARSE, and a kernel before 6.4 (which lets the file of an emptied slot
// go only a second later, so that CloseFd would not close it) one wrapping unix.EOPNOTSUPP
// that names it. After an error, requests on fd work as before, unregistered.
func (l *Loop) RegisterFile(fd int) error {
	return l.fixFile(fd, true)
}

// UnregisterFile empties fd's slot in the ring's registered-file table (see RegisterFile; one
// io_uring_register(2), IORING_REGISTER_FILES_UPDATE, Linux 5.5): requests on fd made from now
// on look fd up again, and a close(2) of fd then releases the file once the requests made before
// (which keep the registered file) are done; after a close(2) of a registered fd it is what
// releases the old file. Requests on fd that are prepared but not yet in the kernel are
// submitted first (one io_uring_enter(2)), so that they still find the slot. An fd that is not
// registered (a closed number too), and every backend but uring, do nothing. Errors:
// ErrNotOwner, ErrClosed, ErrFdClosing while a CloseFd closes fd, an error wrapping unix.EBADF
// for a negative fd or one of the loop's own fds, and on uring one wrapping the
// io_uring_enter(2) or io_uring_register(2) errno.
func (l *Loop) UnregisterFile(fd int) error {
	return l.fixFile(fd, false)
}

func (l *Loop) fixFile(fd int, on bool) error {
	what := "RegisterFile"
	if !on {
		what = "UnregisterFile"
	}
	if !l.owned() {
		return ErrNotOwner
	}
	if l.closed {
		return ErrClosed
	}
	if fd < 0 || fd > 1<<31-1 {
		return fmt.Errorf("ringev: %s(%d): %w", what, fd, unix.EBADF)
	}
	if l.ownsFd(fd) {
		return fmt.Errorf("ringev: %s(%d): one of the loop's own fds: %w", what, fd, unix.EBADF)
	}
	rq := l.reqs()
	if err := rq.fdClosing(fd); err != nil {
		return fmt.Errorf("ringev: %s(%d): %w", what, fd, err)
	}
	if on {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return fmt.Errorf("ringev: %s(%d): not an open file: %w", what, fd, err)
		}
	} else if int(fd) >= len(rq.fds) || !rq.fds[fd].is(fdFixed) {
		return nil // not registered (a closed number too: UnregisterFile after a close(2))
	}
	if err := rq.setFixed(int32(fd), on); err != nil {
		return fmt.Errorf("ringev: %s(%d): %w", what, fd, err)
	}
	return nil
}

// setFixed puts fd's file in the ring's registered-file table (on) or empties its slot: the
// work of RegisterFile and UnregisterFile once their checks passed.
func (rq *requests) setFixed(fd int32, on bool) error {
	f := rq.fdState(fd)
	if f.is(fdFixed) == on {
		return nil
	}
	// The driver reads fdFixed when it prepares an SQE (ringReqs.fdBits): a continuation
	// prepared after this (the rest of a short write, a multishot re-armed) follows it; the
	// requests already in the kernel keep the registered file.
	live := f.live() > 0
	for r := rq.ios(fd); r != nil; r = r.rare.ioNext {
		live = live || r.state != stFree
	}
	fixed, err := rq.drv.fixFile(fd, on, live)
	f.set(fdFixed, fixed)
	for r := rq.ios(fd); r != nil; r = r.rare.ioNext {
		r.ioFixed = fixed
		rq.fixIO(r)
	}
	return err
}

// unfix is reqLayer's: it empties fd's slot in the ring's registered-file table, if fd is
// registered (RegisterFile), before the loop closes fd itself (an fd event's auto-close): else
// the table keeps the file open after the close (a socket's peer sees no EOF), and the requests
// made on a file that takes the number next would reach the old one through the slot.
func (rq *requests) unfix(fd int) error {
	if fd >= 0 && fd < len(rq.fds) && rq.fds[fd].is(fdFixed) {
		if err := rq.setFixed(int32(fd), false); err != nil {
			return fmt.Errorf("ringev: close fd %d: emptying its registered-file slot: %w", fd, err)
		}
	}
	return nil
}

// registerEveryFd (tests only: SetRegisterEveryFd) registers the fd of every request in the
// ring's file table when the loop first sees the number (RegisterFile), so that the request
// suite runs with IOSQE_FIXED_FILE.
var registerEveryFd bool
