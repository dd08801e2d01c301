//go:build unix

package ringev

// Completion errors: what Completion.Err holds when a request failed, naming the request.

import (
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// RequestError is the error of a failed request's completion (Completion.Err). It names the
// operation and its fd, and when the request's deadline passed, that deadline. It wraps the
// errno: errors.Is(err, unix.ETIME) holds for a deadline (ETIMEDOUT where the system has no
// ETIME), unix.ECANCELED for a cancel. errors.As(err, &re) with re a *RequestError reaches its
// fields.
//
// The loop never changes a RequestError once a callback got it, so a callback may keep it.
type RequestError struct {
	Op Op
	// Fd is the request's fd, or -1 for a SubmitSQE without one.
	Fd    int
	Errno unix.Errno
	// Timeout is the deadline SetTimeout last gave the request when it passed (Errno is
	// unix.ETIME), else 0.
	Timeout time.Duration
}

// Error returns, for example, "ringev: recv on fd 7: deadline of 2s passed: timer expired".
func (e *RequestError) Error() string {
	s := "ringev: " + e.Op.String()
	if e.Fd >= 0 {
		s += " on fd " + strconv.Itoa(e.Fd)
	}
	if e.Timeout > 0 {
		s += ": deadline of " + e.Timeout.String() + " passed"
	}
	return s + ": " + e.Errno.Error()
}

// Unwrap returns the errno.
func (e *RequestError) Unwrap() error { return e.Errno }

// compErr returns the error of a completion of r with result res (-errno). An error is never
// changed once made, so the last one is given again when it says the same (a connection whose
// recv keeps timing out, a multishot recv that keeps running dry), and a new one, kept in r's
// rare part, when it does not: a failed request allocates once, not at every failure.
func (r *reqRec) compErr(res int32) error {
	e := RequestError{Op: r.op, Fd: int(r.fd), Errno: unix.Errno(-res)}
	if r.noFd {
		e.Fd = -1
	}
	if r.timedOut && e.Errno == eTime {
		e.Timeout = r.rare.timeout // SetTimeout took the rare part
	}
	x := r.rareOf() // given back with the record: an error completion takes no memory from an idle one
	if p := x.lastErr; p != nil && *p == e {
		return p
	}
	p := new(RequestError)
	*p = e
	x.lastErr = p
	return p
}
