//go:build unix

package ringev

import (
	"errors"
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
	mark     uint64 // == Loop.waitSeq: the last wait's readiness for this fd is still usable (markRan: see runFd)
	ready    Flags  // what the last wait that reported the fd found it ready for (markReady)
	// gen is the generation of the slot's epoll registration (epoll-set backends; 0 on the
	// others), stored in the event's data: an event whose generation differs comes from a
	// registration the loop replaced or could not remove (see setInterest), and is stale. The
	// loop's own eventfds have internalGen.
	gen      uint32
	internal bool // one of the loop's own eventfds (wake-up, exact signals): drained, never dispatched
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
// for a negative or closed fd (from fstat(2)) or one of the loop's own fds (its epoll set,
// io_uring instance, eventfds); one wrapping ErrFdClosing while a CloseFd of fd
// waits for its requests to end; the backend's error
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
	if l.ownsFd(fd) {
		// An event with auto-close would close it; one that reads it would eat wake-ups.
		return nil, fmt.Errorf("ringev: AddFd: fd %d is one of the loop's own fds: %w", fd, unix.EBADF)
	}
	if l.rl != nil {
		// A CloseFd closes it once its requests end: the event would watch a closed number.
		if err := l.rl.fdClosing(fd); err != nil {
			return nil, fmt.Errorf("ringev: AddFd: fd %d: %w", fd, err)
		}
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
	if len(s.events) > 0 && (uint64(st.Dev) != s.dev || st.Ino != s.ino || !l.be.stillWatched(s.fd, s.gen, s.interest)) {
		l.disarmSlot(s) // the old registration may be gone already: its error says nothing
	}
	s.dev, s.ino = uint64(st.Dev), st.Ino
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
	if err := l.setInterest(s, want); err != nil {
		return fmt.Errorf("ringev: watching fd %d for %v: %w", s.fd, union, err)
	}
	return nil
}

// internalGen is the generation of the slots of the loop's own eventfds (fdSlot.internal):
// their registrations carry 0, so that their events take markReady's rare branch, which drains
// them, at no cost to the others. No registration is given it.
const internalGen = ^uint32(0)

// regGen is the generation the backend stores in the slot's registration.
func regGen(s *fdSlot) uint32 {
	if s.internal {
		return 0
	}
	return s.gen
}

// setInterest tells the backend to watch the slot's fd for want (poll bits; 0: stop watching)
// and records it in the slot. On the epoll-set backends a new registration gets a new
// generation unless the slot's last one was removed cleanly (then no event of an older one can
// come: the number keeps its generation). A registration the kernel no longer has under this
// fd number (the fd was closed with close(2), or its number names another file now: EBADF,
// ENOENT) may still live on in the set, orphaned, when a dup keeps its file open: the slot
// then forgets its generation, so that the orphan's events are recognised as stale
// (markReady), and stops watching; removing such a registration is not an error (the fd is
// gone already), changing it disarms the slot's events (their flags become 0, as tevent's
// epoll backend does) and returns the error.
func (l *Loop) setInterest(s *fdSlot, want uint32) error {
	if s.internal {
		s.gen = internalGen
	} else if s.interest == 0 && want != 0 && s.gen == 0 && l.epfd >= 0 {
		l.genLast++
		if l.genLast == 0 || l.genLast == internalGen {
			l.genLast = 1
		}
		s.gen = l.genLast
	}
	err := l.be.setInterest(s.fd, regGen(s), s.interest, want)
	if err == nil {
		s.interest = want
		return nil
	}
	if s.interest == 0 || s.internal || !(errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOENT)) {
		return err
	}
	s.gen, s.interest = 0, 0
	if want == 0 {
		return nil
	}
	for _, ev := range s.events {
		ev.flags = 0
	}
	return err
}

// Fd returns the watched fd. It is safe from any goroutine.
func (e *FdEvent) Fd() int { return int(e.fd) }

// Flags returns the flags the event currently waits for. The loop changes them (see Close and
// the loop contract, item 6), so read them on the loop's goroutine, or through Post.
func (e *FdEvent) Flags() Flags { return e.flags }

// SetFlags changes what the event waits for, with effect from the next wait. Setting 0 disarms
// it without closing it. It returns the backend's error (wrapping its errno) if the fd can no
// longer be watched, ErrClosed on a closed event and ErrNotOwner from another goroutine.
func (e *FdEvent) SetFlags(f Flags) error { return e.setFlags(f & (Read | Write | Error)) }

// setFlags is SetFlags for the loop's own events, which may set hangup.
func (e *FdEvent) setFlags(f Flags) error {
	if !e.loop.owned() { // first: the closed flags belong to the owner (no data race)
		return ErrNotOwner
	}
	if e.closed {
		return ErrClosed
	}
	if f == e.flags {
		return nil
	}
	e.flags = f
	return e.loop.updateInterest(e.slot)
}

// SetAutoClose makes Close (of the event, or of the loop) also close the fd. It is safe from
// any goroutine: from one that does not own the loop the change is posted to the loop, as Post
// does, and takes effect before any function posted after it runs. After the loop's Close it
// does nothing.
func (e *FdEvent) SetAutoClose(on bool) {
	if l := e.loop; !l.owned() {
		l.Post(func() { e.autoClose = on }) // ErrClosed: the loop has closed every event
		return
	}
	e.autoClose = on
}

// Close stops the event: its handler never runs again, even if readiness for it was already
// reported, and the event lets go of the handler and of Data (set to nil), so what they hold can
// be garbage-collected while the caller keeps the closed event. With auto-close set, the fd is
// closed too (a registered fd's slot in the ring's registered-file table emptied first: see
// Loop.RegisterFile), and the other fd events on that fd (if any) are disarmed: their flags become 0.
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
		if l.rl != nil {
			if uerr := l.rl.unfix(int(e.fd)); uerr != nil && err == nil {
				err = uerr
			}
		}
		if cerr := unix.Close(int(e.fd)); cerr != nil && err == nil {
			err = fmt.Errorf("ringev: close fd %d: %w", e.fd, cerr)
		}
		return err
	}
	return l.updateInterest(s)
}

// errorFlags is markReady's rare branch for an fd reported with an error, hang-up or half-close
// (revents: POLLERR, POLLHUP, POLLRDHUP): an error or hang-up applies tevent's rule to the
// slot's events (applyErrorRule); a half-close alone does not, since the fd is still writable.
//
//go:noinline
func (l *Loop) errorFlags(s *fdSlot, revents uint32) {
	if revents&(unix.POLLERR|unix.POLLHUP) != 0 {
		l.applyErrorRule(s)
	}
}

// applyErrorRule applies tevent's rule for an fd with an error or hang-up (POLLERR, POLLHUP)
// to the slot's events: a handler without Read or Error is not told, and loses its Write flag
// instead. The others are handed Error and Read (and Write if POLLOUT is reported too).
func (l *Loop) applyErrorRule(s *fdSlot) {
	changed := false
	for _, ev := range s.events {
		if ev.flags&(Read|Error|hangup) == 0 && ev.flags&Write != 0 {
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
	err := l.setInterest(s, 0)
	s.interest = 0
	return err
}

// rebuildEpollSet removes orphaned epoll registrations, those that a stale event (markReady)
// showed to be alive: the set's fd number gets a new, empty set (the backend's replaceSet) and
// every watched fd is added again with its slot's generation. An fd that cannot be added again
// (closed with close(2) meanwhile: EBADF) has its events disarmed (flags 0) and the error
// names it. This costs a syscall per watched fd, once per orphan that becomes ready; the busy
// path never comes here.
//
//go:noinline
func (l *Loop) rebuildEpollSet() error {
	l.stale = false
	es, ok := l.be.(epollSetBackend)
	if !ok {
		return nil
	}
	if err := es.replaceSet(); err != nil {
		return fmt.Errorf("ringev: replacing the epoll set after a stale event: %w", err)
	}
	var first error
	for _, s := range l.slots {
		if s == nil || s.interest == 0 {
			continue
		}
		if err := l.be.setInterest(s.fd, regGen(s), 0, s.interest); err != nil {
			for _, ev := range s.events {
				ev.flags = 0
			}
			s.interest, s.gen, s.mark = 0, 0, 0
			if first == nil {
				first = fmt.Errorf("ringev: rebuilding the epoll set: fd %d: %w; its %d fd event(s) are disarmed", s.fd, err, len(s.events))
			}
		}
	}
	return first
}

// badFd is called when a read or write through the loop (Loop.ReadNonblocking,
// WriteNonblocking) on fd failed with EBADF. If the loop watches fd and the number is no
// longer open (or names another file now), the fd was closed with close(2) behind the loop's
// back; its epoll registration may live on, orphaned, when a dup keeps the file open, and
// report the old file's readiness for this number. The slot is then treated as POLLNVAL is:
// its events are disarmed (flags 0), the loop stops watching it (the orphan's events are then
// stale and removed by the next wait, markReady), and the Once that ran the handler returns an
// error wrapping EBADF that names the fd. An fd that is open, as the same file (EBADF: not open
// for that I/O), is left alone.
//
//go:noinline
func (l *Loop) badFd(fd int) {
	if l.closed || uint(fd) >= uint(len(l.slots)) {
		return
	}
	s := l.slots[fd]
	if s == nil || s.internal || len(s.events) == 0 {
		return
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || uint64(st.Dev) == s.dev && st.Ino == s.ino {
			return
		}
	}
	n := len(s.events)
	l.disarmSlot(s)
	s.mark = 0
	l.setPendErr(fmt.Errorf("ringev: fd %d is not open (a read or write through the loop failed with EBADF); its %d fd event(s) are disarmed: %w", fd, n, unix.EBADF))
}

// disarmForClose disarms the fd events that watch fd, which CloseFd closes: their readiness
// from the last wait is dropped, their flags become 0, and they lose their auto-close (the
// number will be closed by CloseFd, and may be another file's by the time they are closed).
// The loop's own fd events (the emulation's) are left to the requests' side.
func (l *Loop) disarmForClose(fd int) {
	if uint(fd) >= uint(len(l.slots)) || l.slots[fd] == nil || l.slots[fd].internal {
		return
	}
	s := l.slots[fd]
	s.mark = 0
	l.dropNews(s)
	l.disarmSlot(s)
	for _, ev := range s.events {
		ev.autoClose = false // CloseFd closes the fd: an event's Close must not close the number again
	}
}
