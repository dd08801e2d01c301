//go:build linux

package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// EchoUntilEOF sends back what c receives until its end of file (or an error), with read and
// write: io.Copy would splice through a pipe that Go's pool keeps open after the test, which
// the tests' fd-leak checks would see.
func EchoUntilEOF(c net.Conn) {
	b := make([]byte, 64<<10)
	for {
		n, err := c.Read(b)
		if n > 0 {
			if _, err := c.Write(b[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// SyncBuffer is a bytes.Buffer safe from several goroutines: a log's output that a loop writes
// and the test reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WriteUntilStall writes chunk to c again and again until a write stalls for d (its deadline
// passes: nobody reads at the other end, and what is between holds no more), and returns the
// bytes written. Errors: the write's, when it is not the deadline's, and one when max bytes
// were written without a stall.
func WriteUntilStall(c net.Conn, chunk []byte, max int, d time.Duration) (int, error) {
	written := 0
	c.SetWriteDeadline(time.Now().Add(d))
	for written < max {
		n, err := c.Write(chunk)
		written += n
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return written, fmt.Errorf("writing, after %d bytes: %w, want a stall", written, err)
			}
			return written, nil
		}
	}
	return written, fmt.Errorf("%d bytes written towards a reader that reads nothing: no backpressure", written)
}
