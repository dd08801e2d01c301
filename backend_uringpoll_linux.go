package ringev

import (
	"errors"
	"fmt"
	"time"

	"github.com/ringev/ringev/uring"
	"golang.org/x/sys/unix"
)

// uringPollBackend is the "uring-poll" backend, the seed's first design: one one-shot
// IORING_OP_POLL_ADD per watched fd, re-armed after each completion, on a ring set up with the
// best flags the kernel accepts (SINGLE_ISSUER|DEFER_TASKRUN first). A one-shot poll that is
// re-armed after the handler ran completes at once if the condition still holds, so fd events
// stay level-triggered. Every user_data carries the fd and a generation, so a completion for a
// removed or re-armed poll is dropped.
//
// It is not close-safe, and so never chosen by "auto": a pending POLL_ADD holds a reference to
// the file (the first seed's show-stopper), so a close(2) behind the loop's back does not
// release the file (a socket peer sees no EOF) until the loop re-arms or removes the poll, and
// a second loop that never runs Once pins every file it watches. FdEvent.Close and auto-close
// do remove the poll, so code that closes only through the loop is safe.
type uringPollBackend struct {
	ring  *uring.Ring
	st    []uringFd // indexed by fd number
	rearm []int32   // fds to (re)arm at the next wait
}

// uringFd is the backend's state for one fd number.
type uringFd struct {
	interest uint32 // poll bits wanted (0: not watched)
	gen      uint32 // generation of the current poll request (31 bits)
	armed    bool   // a POLL_ADD with gen is in the SQ or in the kernel
	queued   bool   // fd is in rearm
	multi    bool   // arm a multishot poll: the one-shot one completed with none of interest's bits
}

// removeTag marks the user_data of POLL_REMOVE requests (with their target's below it), whose
// completions are ignored but for EALREADY.
const removeTag = 1 << 63

func uringUserData(fd int32, gen uint32) uint64 {
	return uint64(uint32(fd)) | uint64(gen&0x7fffffff)<<32
}

func openUringPoll() (backend, error) {
	r, err := uring.New(uring.WithEntries(256))
	if err != nil {
		return nil, fmt.Errorf("uring-poll: %w", err)
	}
	_ = r.RegisterRingFd() // as in openUring
	if err := tryEnter(r); err != nil {
		r.Close()
		return nil, fmt.Errorf("uring-poll: %w", err)
	}
	return &uringPollBackend{ring: r}, nil
}

func (b *uringPollBackend) state(fd int32) *uringFd {
	if int(fd) >= len(b.st) {
		st := make([]uringFd, 2*len(b.st)+int(fd)+16)
		copy(st, b.st)
		b.st = st
	}
	return &b.st[fd]
}

// sqe returns a free SQE, submitting what is queued when the SQ is full.
func (b *uringPollBackend) sqe() (*uring.SQE, error) { return ringSQE(b.ring) }

// ringSQE returns a free SQE of r, submitting what is queued when the SQ is full.
func ringSQE(r *uring.Ring) (*uring.SQE, error) {
	for i := 0; i < 2; i++ {
		if s := r.GetSQE(); s != nil {
			return s, nil
		}
		if _, err := r.Submit(); err != nil {
			return nil, fmt.Errorf("ringev: uring backend: submit: %w", err)
		}
	}
	return nil, errors.New("ringev: uring backend: submission queue stays full")
}

// tryEnter submits a NOP on the new ring r and waits for its CQE: io_uring_setup can be allowed
// where io_uring_enter is not (a seccomp filter that denies it alone), and a backend whose every
// wait would fail must not be chosen. The error wraps io_uring_enter's (unix.EPERM there).
func tryEnter(r *uring.Ring) error {
	s := r.GetSQE()
	if s == nil {
		return errors.New("a new ring has no free SQE")
	}
	s.PrepNop()
	s.SetUserData(0)
	if _, err := r.SubmitAndWait(1); err != nil {
		return fmt.Errorf("a NOP through the new ring: %w", err)
	}
	for _, ok := r.PopCQE(); ok; _, ok = r.PopCQE() {
	}
	return nil
}

// ringWaitError is the error of a wait in the ring for the loop: nil for a timeout (ETIME) or a
// signal (EINTR), after which the core recomputes its deadline.
func ringWaitError(err error) error {
	if err == nil || errors.Is(err, unix.ETIME) || errors.Is(err, unix.EINTR) {
		return nil
	}
	return fmt.Errorf("ringev: uring backend: %w", err)
}

// remove prepares the removal of fd's armed poll.
func (b *uringPollBackend) remove(fd int32, st *uringFd) error {
	return b.removeUD(uringUserData(fd, st.gen))
}

// removeUD prepares the removal (IORING_OP_POLL_REMOVE) of the poll with user_data target; the
// removal's own user_data is target with removeTag, so that an EALREADY can be retried.
func (b *uringPollBackend) removeUD(target uint64) error {
	s, err := b.sqe()
	if err != nil {
		return err
	}
	s.PrepPollRemove(target)
	s.SetUserData(removeTag | target)
	return nil
}

func (b *uringPollBackend) setInterest(fd int32, _, old, new uint32) error {
	st := b.state(fd)
	if st.armed && new != st.interest {
		if err := b.remove(fd, st); err != nil {
			return err
		}
		st.armed = false
		st.gen++
		st.multi = false
	}
	if new == 0 && b.ring.SQReady() > 0 {
		// Submit the removals queued (this one, or one queued by an earlier change of
		// interest, or a retried one, while no poll was armed): a pending poll holds a
		// reference to the file, which must be gone before the caller closes the fd
		// (auto-close).
		if _, err := b.ring.Submit(); err != nil {
			return fmt.Errorf("ringev: uring-poll backend: submit: %w", err)
		}
	}
	st.interest = new
	if new != 0 && !st.armed && !st.queued {
		st.queued = true
		b.rearm = append(b.rearm, fd)
	}
	return nil
}

func (b *uringPollBackend) wait(timeout int64, buf []readyFd) ([]readyFd, error) {
	for _, fd := range b.rearm {
		st := &b.st[fd]
		st.queued = false
		if st.interest == 0 || st.armed {
			continue
		}
		s, err := b.sqe()
		if err != nil {
			return buf, err
		}
		if st.multi {
			s.PrepPollMultishot(int(fd), st.interest)
		} else {
			s.PrepPollAdd(int(fd), st.interest)
		}
		s.SetUserData(uringUserData(fd, st.gen))
		st.armed = true
	}
	b.rearm = b.rearm[:0]

	var err error
	if timeout == 0 || b.ring.CQReady() > 0 {
		_, err = b.ring.Submit()
	} else {
		_, err = b.ring.SubmitAndWaitTimeout(1, time.Duration(timeout))
	}
	if err := ringWaitError(err); err != nil {
		return buf, err
	}
	for {
		n := len(buf)
		if buf, err = b.reap(buf); err != nil || len(buf)-n < taskWorkBatch {
			return buf, err
		}
		// A full batch: with DEFER_TASKRUN one enter runs at most taskWorkBatch polls'
		// completion work, and more fds may be ready; the loop's fairness needs them all.
		if _, err := b.ring.Submit(); err != nil {
			return buf, ringWaitError(err)
		}
	}
}

// taskWorkBatch is the most deferred completions one io_uring_enter(2) runs with GETEVENTS and
// a min_complete below it (IO_LOCAL_TW_DEFAULT_MAX in io_uring/tw.h, DEFER_TASKRUN).
const taskWorkBatch = 20

// reap appends to buf the fds the ring's CQEs report ready.
func (b *uringPollBackend) reap(buf []readyFd) ([]readyFd, error) {
	for c, ok := b.ring.PopCQE(); ok; c, ok = b.ring.PopCQE() {
		ud, res := c.UserData, c.Res
		if ud&removeTag != 0 {
			if res == -int32(unix.EALREADY) {
				// The poll was being completed (a multishot poll's task work owned it) and
				// stays armed: ask again.
				if err := b.removeUD(ud &^ removeTag); err != nil {
					return buf, err
				}
			}
			continue
		}
		fd := int32(uint32(ud))
		if int(fd) >= len(b.st) {
			continue
		}
		st := &b.st[fd]
		if !st.armed || st.gen&0x7fffffff != uint32(ud>>32) {
			if c.Flags&uring.CQEFMore != 0 {
				// A removed multishot poll still armed (its removal lost a race): remove it
				// again, or it would hold the file after a close.
				if err := b.removeUD(ud); err != nil {
					return buf, err
				}
			}
			continue // a completion for a removed poll
		}
		if res >= 0 && uint32(res)&(st.interest|unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) == 0 {
			// None of what was asked: io_uring adds POLLRDHUP to every poll (IO_POLL_UNMASK in
			// io_uring/poll.c), so a peer's half-close completes a poll for Write alone, and a
			// one-shot poll re-armed would complete again at once, for ever. Wait with a
			// multishot poll instead, which completes only on the next wake-up.
			if c.Flags&uring.CQEFMore != 0 {
				continue // the multishot poll stays armed
			}
			st.armed = false
			st.gen++
			st.multi = true
			b.queue(fd, st)
			continue
		}
		if c.Flags&uring.CQEFMore != 0 {
			// A multishot poll reports readiness: back to one-shot polls (level-triggered), so
			// this one goes (its later completions have an old generation).
			if err := b.remove(fd, st); err != nil {
				return buf, err
			}
		}
		st.armed = false
		st.gen++
		st.multi = false
		if res < 0 {
			if res == -int32(unix.ECANCELED) {
				b.queue(fd, st)
				continue
			}
			// EBADF: the fd was closed behind the loop's back.
			buf = append(buf, readyFd{Fd: fd, Events: unix.POLLNVAL})
			continue
		}
		b.queue(fd, st)
		buf = append(buf, readyFd{Fd: fd, Events: uint32(res)})
	}
	return buf, nil
}

// queue marks fd for re-arming at the next wait, after its handler (if any) has run.
func (b *uringPollBackend) queue(fd int32, st *uringFd) {
	if st.interest != 0 && !st.queued {
		st.queued = true
		b.rearm = append(b.rearm, fd)
	}
}

func (b *uringPollBackend) stillWatched(int32, uint32, uint32) bool { return true }

func (b *uringPollBackend) close() error {
	if b.ring == nil {
		return nil
	}
	err := b.ring.Close()
	b.ring = nil
	return err
}
