// Package ringev is an event loop in the model of Samba's tevent, in pure Go. Its backends are
// poll(2), epoll(7) and io_uring, over ringev's own io_uring binding (package uring).
//
// A Loop watches fds (fd events), runs timers, immediates and signal handlers, and runs
// functions posted from other goroutines. Beside these it runs requests: completion I/O, one
// operation and one callback each (see Requests). Each call to Once runs one handler, in
// tevent's order; Run calls Once until Stop or until nothing is left to wait for.
//
//	loop, err := ringev.New() // "auto": io_uring, else epoll, else poll
//	if err != nil { ... }
//	defer loop.Close()
//	// fd: any non-blocking fd, such as a socket or a pipe's read end.
//	ev, err := loop.AddFd(fd, ringev.Read, func(ev *ringev.FdEvent, flags ringev.Flags) {
//		// read from ev.Fd() until EAGAIN, or once: the event is level-triggered
//	})
//	loop.AddTimer(time.Second, func(*ringev.Timer) { loop.Stop() })
//	err = loop.Run()
//
// # The loop contract
//
// These rules are tevent's, kept exactly, plus one bound on starvation (item 1). Every backend
// keeps them; one conformance suite checks them on each backend. Doc comments cite them as "the
// loop contract, item N".
//
//  1. Once runs one handler. Its order: pending signals, posted functions, one immediate, one
//     expired timer. Only when none of those is due does it wait for fds, until the next
//     timer's deadline, and run one fd handler. So that nothing that re-queues itself starves
//     the fds, the Once after FdStarvationLimit Onces that ran the others looks at the fds
//     first, without blocking, and runs a ready fd handler if there is one.
//  2. fd events are level-triggered: a condition left unconsumed is reported again on the next
//     Once.
//  3. Fair: of the ready fd handlers, the one that ran least recently runs first.
//  4. Any number of handlers may watch one fd, each with its own Flags. Flags change at any
//     time, with exact effect.
//  5. After FdEvent.Close, the event's handler never runs again. A plain close(2) behind the
//     loop's back releases the file, so a socket's peer sees EOF, on every backend but
//     uring-poll. On poll the release waits until the loop's wait returns: a sleeping ppoll(2)
//     holds every file it polls. The handler of an fd closed that way may run once more, from
//     readiness the loop already held (see WithFreshReadiness). On poll and uring-poll, which
//     watch fd numbers, it may also run for a new file that took the number before the loop
//     noticed. On uring and epoll a registration belongs to the open file, not to the number.
//     While a dup keeps the file open (fork, an exec'd child, fd passing, net.Conn.File),
//     close(2) leaves it registered, and its readiness is reported for the number. A handler
//     that uses Loop.ReadNonblocking or WriteNonblocking then runs once more: its I/O fails
//     with EBADF, the loop disarms the fd's events, and Once returns an error wrapping
//     unix.EBADF that names the fd. A handler that calls read(2) itself keeps being called
//     until its event is closed or changed: telling would cost a syscall per event. Events of
//     a registration the loop replaced never reach a handler: each registration carries a
//     generation, and the first stale event makes the loop rebuild its epoll set.
//  6. A handler that watches only Write is not called on an error or hang-up; its Write flag
//     is cleared instead (tevent's rule). The others get Read and Error, those they watch, and
//     Write too when the fd is also writable (see Flags). A half-close (POLLRDHUP: the peer's
//     shutdown(SHUT_WR)) is reported as Error and Read and leaves Write alone. POLLNVAL
//     disarms every handler of the fd, and Once returns an error.
//  7. Timers use the monotonic clock. They run in deadline order, ties in creation order. A
//     timer that falls due runs after the timers already due and before fd events.
//  8. Post and Stop are safe from any goroutine. Any other call from another goroutine either
//     works, queuing its work to the loop as Post does, or returns an error wrapping
//     ErrNotOwner. It is never a silent no-op (see Ownership).
//  9. Run returns when nothing is left to wait for, on Stop, or on an error. Once called from
//     inside a handler returns ErrNested.
//  10. Signals arrive through os/signal and are delivered as loop events with a count. With
//     WithExactSignals the loop's own handler counts every delivery, as tevent does.
//  11. Request completions run where fd handlers run: after signals, posted functions,
//     immediates and due timers. One Once runs either one fd handler or a batch of
//     completions: at most 32, and at most 8 of one multishot request. When both are ready
//     they take turns. Completions run in the order the loop learned of them; the deferred
//     completions of a multishot request keep their order. Where requests are emulated
//     (epoll, poll, uring-poll), the emulation's own fd event, one per fd with requests
//     waiting, takes an fd handler's turn.
//
// # Requests
//
// A request is one operation and one callback: Loop.Read, Write, Recv, Send, Accept,
// AcceptMultishot, Connect, Fsync, CloseFd, RecvMultishot into a BufferGroup, and SubmitSQE
// for an SQE prepared with package uring (uring only). The loop runs the callback exactly
// once: with the result, an error wrapping the errno, or ECANCELED. A multishot request's
// callback runs once per completion; all but the last have Completion.More set.
// Request.Cancel only asks: the callback still comes, with the result if the operation won.
// Request.SetTimeout gives a deadline, reported as ETIME.
//
// A request's buffer belongs to the kernel from the call until its last callback, cancelled
// requests included. The loop keeps it reachable for the garbage collector meanwhile. Do not
// read, write or reuse it before that callback.
//
// Close an fd that has requests with Loop.CloseFd, not with close(2). CloseFd cancels the
// fd's requests and calls close(2) after their last completion. So the kernel holds no
// reference, the peer sees EOF, and a reused fd number never gets an old completion. A plain
// close(2) with a request in flight leaves the file open on uring: the kernel holds it.
//
// On uring, the requests made during one turn are SQEs. They reach the kernel in the loop's
// one io_uring_enter, together with its wait. On the other backends the same API is
// emulated with readiness and non-blocking syscalls. So code written with requests also runs
// where io_uring is denied (Docker's default seccomp profile, the kernel.io_uring_disabled
// sysctl).
// Loop.CheckOp tells beforehand whether an operation works here.
//
// A request allocates nothing when its callback is made once and reused. Make one Callback per
// connection (a method value) and tell its requests apart by their token (Completion.Token). A
// closure made per request is a heap allocation per request. The loop recycles its request
// records, and the Completion it passes belongs to the loop. See Example_requests.
//
// # Ownership
//
// A Loop belongs to the goroutine that called New. New locks that goroutine to its OS thread
// until Close: io_uring's SINGLE_ISSUER and DEFER_TASKRUN bind a ring to the thread that made
// it. From any goroutine, these work: Post and Stop; AddTimer, AddTimerAt and AddImmediate,
// which queue the handler to the loop and return its handle at once; Timer.Stop, and
// Immediate.Schedule and Cancel, whose result is exact; FdEvent.SetAutoClose, Signal.Close,
// BufferGroup.Release and Completion.ReleaseBuffer, queued to the loop; ReadNonblocking and
// WriteNonblocking, which are then plain read(2) and write(2); Owned; and the getters of what
// never changes (Backend, FdEvent.Fd, Timer.Deadline, BufferGroup.Len). Every other method returns
// an error wrapping ErrNotOwner and changes nothing. Getters of what the loop changes
// (FdEvent.Flags, Request.Pending, IOPath) belong on the loop's goroutine: ask through Post.
//
// # Backends
//
// Backends lists "uring", "epoll" and "poll" in the order "auto" tries them, then
// "uring-poll". WithBackend picks one by name; BackendReason tells why "auto" chose what it
// did. "uring" keeps the fds in an epoll set and blocks in the ring, so close(2) releases a
// file whoever closes it. "uring-poll" is used only when named: it is not close-safe (item 5).
//
// Every backend is Linux's: poll is ppoll(2) with an eventfd wake-up and POLLRDHUP. On macOS
// and the BSDs the package builds, so code written against it compiles, and New fails with an
// error that names the system and wraps errors.ErrUnsupported; SubmitSQE,
// which takes package uring's SQE, exists on Linux only. On Windows the package is empty: its
// API uses golang.org/x/sys/unix.
//
// # Options
//
// WithFreshReadiness runs every fd handler on readiness from a wait in the same Once.
// WithDispatchAll runs every ready fd handler in one Once. WithExactSignals counts every signal
// delivery. WithIOPath picks how handler I/O goes on uring. WithBatchWait lets a sleeping uring
// loop wait for several completions. WithRecvPollFirst controls IORING_RECVSEND_POLL_FIRST.
//
// # Handler I/O
//
// Handlers of non-blocking fds should read and write with Loop.ReadNonblocking and
// WriteNonblocking. On uring, once a handler has used up the readiness the loop held, its I/O
// may go through the ring together with the loop's next look at its fds: WithIOPath("ring").
// That pays where syscalls are dear (page-table isolation) and costs more than it spares where
// they are cheap, so by default they are read(2) and write(2) (Loop.IOPath says which). On the
// other backends they are read(2) and write(2). The package functions ReadNonblocking and
// WriteNonblocking are read(2) and write(2) everywhere.
package ringev
