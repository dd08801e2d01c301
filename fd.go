package ringev

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FdHandler is called when an fd event's fd is ready. flags is the subset of the event's flags
// that is ready (never 0). The handler runs on the loop's goroutine.
type FdHandler func(ev *FdEvent, flags Flags)

// FdEvent is one handler watching one fd. Any number of fd events may watch the same fd, each
// with its own flags.
type FdEvent struct {
	loop      *Loop
	slot      *fdSlot
	fd        int32
	flags     Flags
	handler   FdHandler
	lastRun   uint64 // dispatch clock value when the handler last ran (fairness)
	autoClose bool
	closed    bool
	// Data is free for the caller's use (tevent's private_data). Close sets it to nil.
	Data any
}

// fdSlot is everything the loop knows about one fd number.
type fdSlot struct {
	fd       int32
	interest uint32     // poll bits given to the backend (union of the handlers' flags)
	events   []*FdEvent // evBuf, or a larger array when more than two events watch the fd
	evBuf    [2]*FdEvent
	// evStore holds the first two fd events ever added on this slot, next to the slot so that
	// dispatch touches one page for both (once.go); evStored counts those used. A closed
	// event's storage is never reused: its caller may still hold it.
	evStore  [2]FdEvent
	evStored int
	dev, ino uint64 // identity of the file when the last event was added (see checkIdentity)
	mark     uint64 // == Loop.waitSeq: the last wait's readiness for this fd is still usable
	internal bool   // one of the loop's own eventfds (wake-up, exact signals): drained, never dispatched
}

// slot returns the slot for fd, creating it.
func (l *Loop) slot(fd int32) *fdSlot {
	if int(fd) >= len(l.slots) {
		n := 2 * len(l.slots)
		if n <= int(fd) {
			n = int(fd) + 16
		}
		s := make([]*fdSlot, n)
		copy(s, l.slots)
		l.slots = s
	}
	s := l.slots[fd]
	if s == nil {
		s = &fdSlot{fd: fd}
		s.events = s.evBuf[:0]
		l.slots[fd] = s
	}
	return s
}

// AddFd watches fd for flags (any of Read, Write, Error; 0 adds a disarmed event) and calls h
// when some of them are ready. The loop does not own fd unless SetAutoClose(true) is called.
// Errors: ErrClosed after Close; ErrNotOwner from another goroutine; one wrapping unix.EBADF
// for a negative or closed fd (from fstat(2)); the backend's error
// (wrapping its errno, e.g. unix.EBADF or unix.EPERM from epoll_ctl) when the fd cannot be watched.
func (l *Loop) AddFd(fd int, flags Flags, h FdHandler) (*FdEvent, error) {
	if !l.owned() { // first: the closed flags belong to the owner (no data race)
		return nil, ErrNotOwner
	}
	if l.closed {
		return nil, ErrClosed
	}
	if fd < 0 || fd > 1<<31-1 {
		return nil, fmt.Errorf("ringev: AddFd: fd %d: %w", fd, unix.EBADF)
	}
	if h == nil {
		return nil, fmt.Errorf("ringev: AddFd: fd %d: nil handler", fd)
	}
	// fstat first: an fd number that is not open must not grow the fd table.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("ringev: AddFd: fd %d: %w", fd, err)
	}
	s := l.slot(int32(fd))
	if s.internal {
		return nil, fmt.Errorf("ringev: AddFd: fd %d is the loop's own eventfd: %w", fd, unix.EBADF)
	}
	l.checkIdentity(s, &st)
	var ev *FdEvent
	if s.evStored < len(s.evStore) {
		ev = &s.evStore[s.evStored]
		s.evStored++
	} else {
		ev = new(FdEvent)
	}
	*ev = FdEvent{loop: l, slot: s, fd: int32(fd), flags: flags & (Read | Write | Error), handler: h}
	s.events = append(s.events, ev)
	s.mark = 0
	l.dropNews(s)
	if err := l.updateInterest(s); err != nil {
		s.events = s.events[:len(s.events)-1]
		return nil, err
	}
	l.nfd++
	return ev, nil
}

// checkIdentity records which file the slot's fd number names (st: its fstat(2)). When events
// are added to a slot that already has some and the fd number now names another file, the old
// file was closed behind the loop's back and the number reused: the old events are disarmed
// (their flags cleared, so their handlers never see the new file's events) and the backend
// forgets the old registration. Another file shows either as another device and inode, or,
// for files that share one inode (eventfd, timerfd, signalfd, epoll: anonymous inodes), as a
// kernel registration that is gone (the epoll-based backends ask epoll_ctl).
func (l *Loop) checkIdentity(s *fdSlot, st *unix.Stat_t) {
	if len(s.events) > 0 && (st.Dev != s.dev || st.Ino != s.ino || !l.be.stillWatched(s.fd, s.interest)) {
		l.disarmSlot(s) // the old registration may be gone already: its error says nothing
	}
	s.dev, s.ino = st.Dev, st.Ino
}

// updateInterest recomputes the union of the slot's flags and tells the backend if it changed.
func (l *Loop) updateInterest(s *fdSlot) error {
	var union Flags
	for _, ev := range s.events {
		union |= ev.flags
	}
	want := pollBits(union)
	if want == s.interest {
		return nil
	}
	if err := l.be.setInterest(s.fd, s.interest, want); err != nil {
		return fmt.Errorf("ringev: watching fd %d for %v: %w", s.fd, union, err)
	}
	s.interest = want
	return nil
}

// Fd returns the watched fd.
func (e *FdEvent) Fd() int { return int(e.fd) }

// Flags returns the flags the event currently waits for.
func (e *FdEvent) Flags() Flags { return e.flags }

// SetFlags changes what the event waits for, with effect from the next wait. Setting 0 disarms
// it without closing it. It returns the backend's error (wrapping its errno) if the fd can no
// longer be watched, ErrClosed on a closed event and ErrNotOwner from another goroutine.
func (e *FdEvent) SetFlags(f Flags) error {
	if !e.loop.owned() { // first: the closed flags belong to the owner (no data race)
		return ErrNotOwner
	}
	if e.closed {
		return ErrClosed
	}
	f &= Read | Write | Error
	if f == e.flags {
		return nil
	}
	e.flags = f
	return e.loop.updateInterest(e.slot)
}

// SetAutoClose makes Close (of the event, or of the loop) also close the fd.
func (e *FdEvent) SetAutoClose(on bool) { e.autoClose = on }

// Close stops the event: its handler never runs again, even if readiness for it was already
// reported, and the event lets go of the handler and of Data (set to nil), so what they hold can
// be garbage-collected while the caller keeps the closed event. With auto-close set, the fd is
// closed too, and the other fd events on that fd (if any) are disarmed: their flags become 0.
// Calling Close again returns nil. From a goroutine other than the loop's owner it returns
// ErrNotOwner and changes nothing. The error is otherwise the backend's (when it could not stop
// watching) or close(2)'s, wrapping the errno.
func (e *FdEvent) Close() error {
	if !e.loop.owned() { // first: the closed flags belong to the owner (no data race)
		return ErrNotOwner
	}
	if e.closed {
		return nil
	}
	e.closed = true
	// The handler and Data go now: the caller may keep the closed event, and the first two
	// events of a slot live inside it (evStore) for the slot's life.
	e.handler, e.Data = nil, nil
	l := e.loop
	if l.closed {
		return nil
	}
	s := e.slot
	for i, x := range s.events {
		if x == e {
			copy(s.events[i:], s.events[i+1:])
			s.events[len(s.events)-1] = nil
			s.events = s.events[:len(s.events)-1]
			break
		}
	}
	l.nfd--
	s.mark = 0
	l.dropNews(s)
	if e.autoClose {
		// Stop watching before the fd number can be reused; the other events on the fd would
		// name a closed fd: they are disarmed (flags 0), so they never see the file that
		// takes the number next.
		err := l.disarmSlot(s)
		if cerr := unix.Close(int(e.fd)); cerr != nil && err == nil {
			err = fmt.Errorf("ringev: close fd %d: %w", e.fd, cerr)
		}
		return err
	}
	return l.updateInterest(s)
}

// applyErrorRule applies tevent's rule for an fd with an error or hang-up (POLLERR, POLLHUP)
// to the slot's events: a handler without Read or Error is not told, and loses its Write flag
// instead. The others are handed Error and Read (and Write if POLLOUT is reported too).
func (l *Loop) applyErrorRule(s *fdSlot) {
	changed := false
	for _, ev := range s.events {
		if ev.flags&(Read|Error) == 0 && ev.flags&Write != 0 {
			ev.flags &^= Write
			changed = true
		}
	}
	if changed {
		l.updateInterest(s)
	}
}

// disarmInvalid clears the flags of every event on an fd the kernel reports invalid (POLLNVAL:
// closed behind the loop's back) and returns the error Once reports.
func (l *Loop) disarmInvalid(s *fdSlot) error {
	l.disarmSlot(s)
	return fmt.Errorf("ringev: fd %d is not open (POLLNVAL); its %d fd event(s) are disarmed: %w", s.fd, len(s.events), unix.EBADF)
}

// disarmSlot clears the flags of every event on the slot and stops watching its fd; it returns
// the backend's error.
func (l *Loop) disarmSlot(s *fdSlot) error {
	for _, ev := range s.events {
		ev.flags = 0
	}
	return l.unwatch(s)
}

// unwatch stops watching the slot's fd (if it is watched); it returns the backend's error.
func (l *Loop) unwatch(s *fdSlot) error {
	if s.interest == 0 {
		return nil
	}
	err := l.be.setInterest(s.fd, s.interest, 0)
	s.interest = 0
	return err
}
