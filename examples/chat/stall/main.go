//go:build linux

// Command stall measures the memory of a chat of examples/chat's spec when one of its clients
// does not read: a client joins and then never reads, --readers clients join and read, and a
// talker sends --mb MB of lines (--size bytes each), which the chat broadcasts to all of them.
// Each reader checks that it gets every line, in order. The talker stays at most --window MB
// ahead of the slowest reader (0: no limit), so that on a loaded machine a reader that reads
// does not fall behind by more than that. The server's RSS (/proc/PID/status) is sampled every
// 10 ms.
//
//	go run ./examples/chat/stall --addr 127.0.0.1:9000 --pid $(pgrep -n chat)
//
// It prints one line: the lines each reader got, the server's RSS before and at its peak
// (VmHWM), and what became of the client that does not read (closed by the server, or open).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringev/ringev/examples/chat/internal/chatclient"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "chat `address`")
	pid := flag.Int("pid", 0, "the server's process, for its RSS")
	readers := flag.Int("readers", 3, "clients that read")
	mb := flag.Int("mb", 100, "MB (10^6 bytes) the talker sends, each line going to every other client")
	size := flag.Int("size", 1000, "bytes in a line")
	window := flag.Float64("window", 1, "MB the talker may be ahead of the slowest reader (0: no limit)")
	timeout := flag.Duration("timeout", 2*time.Minute, "the most the whole run may take")
	flag.Parse()
	if *pid <= 0 || *readers < 1 || *size < 16 || *mb < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "stall: want --pid, --readers >= 1, --size >= 16, --mb >= 1 and no arguments")
		os.Exit(2)
	}
	ahead := int(*window * 1e6 / float64(*size))
	if *window <= 0 {
		ahead = math.MaxInt
	}
	if err := run(*addr, *pid, *readers, (*mb)*1_000_000/(*size), *size, ahead, time.Now().Add(*timeout)); err != nil {
		fmt.Fprintln(os.Stderr, "stall:", err)
		os.Exit(1)
	}
}

// run joins the clients, sends the lines and prints the result.
func run(addr string, pid, readers, lines, size, ahead int, deadline time.Time) error {
	rss0, _ := rss(pid)
	stalled, _, err := chatclient.Join(addr, "stalled", deadline)
	if err != nil {
		return err
	}
	defer stalled.Close()
	rs := make([]*bufio.Reader, readers)
	for i := range rs {
		c, r, err := chatclient.Join(addr, fmt.Sprintf("r%d", i), deadline)
		if err != nil {
			return err
		}
		defer c.Close()
		rs[i] = r
	}
	talker, _, err := chatclient.Join(addr, "talker", deadline)
	if err != nil {
		return err
	}
	defer talker.Close()
	go io.Copy(io.Discard, talker) // the joins and leaves it is sent

	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the RSS, every 10 ms
		defer close(sampled)
		for {
			if v, err := rss(pid); err == nil {
				peak = max(peak, v)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, readers)
	got := make([]atomic.Int64, readers)
	for i, r := range rs {
		wg.Go(func() { errs[i] = receive(r, lines, &got[i]) })
	}
	slowest := func() int {
		n := int64(math.MaxInt64)
		for i := range got {
			n = min(n, got[i].Load())
		}
		return int(n)
	}
	filler := strings.Repeat("x", size-8)
	buf := make([]byte, 0, 64<<10)
	for k := range lines {
		buf = fmt.Appendf(buf, "%06d %s\n", k%1_000_000, filler)
		if len(buf) > 60<<10 || k == lines-1 {
			for k-slowest() > ahead && time.Now().Before(deadline) {
				time.Sleep(100 * time.Microsecond)
			}
			if _, err := talker.Write(buf); err != nil {
				return fmt.Errorf("talker: writing: %w", err)
			}
			buf = buf[:0]
		}
	}
	wg.Wait()
	close(stop)
	<-sampled
	if err := errors.Join(errs...); err != nil {
		return err
	}
	hwm, _ := status(pid, "VmHWM:")
	win := "none"
	if ahead != math.MaxInt {
		win = fmt.Sprintf("%d lines", ahead)
	}
	// The client that does not read: has the server closed it? Read what it holds.
	stalled.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := io.Copy(io.Discard, stalled)
	fate := fmt.Sprintf("closed by the server (%d bytes were still to read, then %v)", n, err)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		fate = fmt.Sprintf("still open (%d bytes read before the deadline)", n)
	}
	fmt.Printf("chat stall: window %s; %d readers each got %d lines of %d bytes (%.0f MB) in order; server RSS %.1f MiB before, peak %.1f MiB sampled, VmHWM %.1f MiB; the client that does not read: %s\n",
		win, readers, lines, size, float64(lines*size)/1e6, mib(rss0), mib(peak), mib(hwm), fate)
	return nil
}

// receive reads until it has the talker's lines, in order, counting them in got; other lines
// (joins, leaves) are skipped.
func receive(r *bufio.Reader, lines int, got *atomic.Int64) error {
	for k := 0; k < lines; {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading after %d lines: %w", k, err)
		}
		if line[0] == '*' {
			continue
		}
		seq, ok := strings.CutPrefix(string(line[:min(len(line), 14)]), "talker: ")
		if n, err := strconv.Atoi(seq); !ok || err != nil || n != k%1_000_000 {
			return fmt.Errorf("read %.40q after %d lines, want the talker's next", line, k)
		}
		k++
		got.Store(int64(k))
	}
	return nil
}

// rss is the process's resident set size in bytes.
func rss(pid int) (int64, error) { return status(pid, "VmRSS:") }

// status reads a "kB" field of /proc/PID/status, in bytes.
func status(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
