//go:build linux

package testutil

import (
	"bytes"
	"net"
	"sync"
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
