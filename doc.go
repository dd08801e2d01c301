// Package ringev is an event loop in the model of Samba's tevent, with poll(2), epoll(7) and
// io_uring backends over ringev's own io_uring binding (package uring), in pure Go.
//
// A Loop watches fds (fd events, level-triggered, any number of handlers per fd), runs timers
// on the monotonic clock, immediates, signal handlers and functions posted from other
// goroutines. Each call to Once runs exactly one handler, in tevent's order: signals, posted
// functions, one immediate, one expired timer, and only then one fd handler, chosen fairly
// (least recently run first); after FdStarvationLimit Onces that ran the others, a ready fd
// handler goes first, so that nothing that re-queues itself starves the fds. Run calls Once
// until Stop or until nothing is left to wait for.
//
//	loop, err := ringev.New() // "auto": io_uring, else epoll, else poll
//	if err != nil { ... }
//	defer loop.Close()
//	ev, err := loop.AddFd(fd, ringev.Read, func(ev *ringev.FdEvent, flags ringev.Flags) {
//		// read from ev.Fd() until EAGAIN, or once: the event is level-triggered
//	})
//	loop.AddTimer(time.Second, func(*ringev.Timer) { loop.Stop() })
//	err = loop.Run()
//
// # Ownership
//
// A Loop belongs to the goroutine that called New: New locks that goroutine to its OS thread
// (io_uring's SINGLE_ISSUER and DEFER_TASKRUN bind a ring to the thread that created it) until
// Close. Only Post and Stop may be called from other goroutines.
//
// # Backends
//
// Backends() lists "uring", "epoll" and "poll" in the order "auto" tries them, then
// "uring-poll", used only when asked for by name (it is not close-safe); WithBackend picks one by
// name and BackendReason tells why "auto" chose what it did. Every backend keeps the same
// contract, shown by one conformance test suite run against each. "uring" keeps the fds in an
// epoll set, so close(2) releases a file whoever closes it, and blocks in the ring.
//
// # Options
//
// WithFreshReadiness makes every fd handler run on readiness from a wait in the same Once;
// WithDispatchAll runs every ready fd handler in one Once; WithExactSignals counts every signal
// delivery, as tevent does, with the loop's own handler instead of os/signal.
//
// # Handler I/O
//
// Handlers of non-blocking fds should read and write with Loop.ReadNonblocking and
// Loop.WriteNonblocking: on the uring backend, when the handler has used up the readiness the
// loop had, the I/O goes through the loop's ring together with the loop's next look at its fds,
// so that the next Once needs no syscall of its own; otherwise, and on the other backends, they
// are read(2) and write(2). The package functions ReadNonblocking and WriteNonblocking are read(2) and write(2)
// on every backend.
package ringev
