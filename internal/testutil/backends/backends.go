//go:build linux

// Package backends holds the backend helpers of the tests of the packages over ringev's loop
// (server, server/nethttp, the examples): which backends they run on, and the skip of one that
// cannot be used here. It imports the root package, which internal/testutil does not.
package backends

import (
	"testing"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// All are the backends the tests run on.
var All = []string{"uring", "epoll", "poll"}

// Check sets up a loop on backend and closes it: the error of ringev.New, if any.
func Check(backend string) error {
	errc := make(chan error)
	go func() { // New locks its goroutine to its thread: a goroutine of its own
		l, err := ringev.New(ringev.WithBackend(backend))
		if err == nil {
			l.Close()
		}
		errc <- err
	}()
	return <-errc
}

// Require skips the test when backend cannot be used here: only uring, and only where
// io_uring is switched off or missing (EPERM, ENOSYS), naming that; any other error from
// setting up a loop on it (Check) fails the test.
func Require(t testing.TB, backend string) {
	t.Helper()
	err := Check(backend)
	if backend == "uring" {
		testutil.SkipIfIOUringUnavailable(t, err, "the uring backend")
	}
	if err != nil {
		t.Fatalf("backend %s: %v", backend, err)
	}
}
