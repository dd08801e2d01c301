//go:build unix

// Command load times a chat of examples/chat's spec under load: --clients clients join one
// after the other (each waits for its own join line), then all of them send --lines lines at
// once, and each reads until it has every other client's lines, checking their sender and
// order. The time is from the first line written to the last delivery read.
//
//	go run ./examples/chat/load --addr 127.0.0.1:9000 --pid $(pgrep -n chat)
//
// It prints one line: deliveries, time, deliveries/s, and the CPU time the client and, with
// --pid, the server used in that interval (getrusage(2), and the server's threads' schedstat),
// with the time the server's threads waited for a CPU: when the client's CPU time is near the
// wall time, the client is the bottleneck, and when the server waited long, the machine's other
// load was: the server's CPU time is then the figure that compares servers.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ringev/ringev/examples/chat/internal/chatclient"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "chat `address`")
	clients := flag.Int("clients", 50, "clients")
	lines := flag.Int("lines", 200, "lines each client sends")
	size := flag.Int("size", 32, "bytes of text in a line")
	batch := flag.Int("batch", 1, "lines per write")
	pid := flag.Int("pid", 0, "the server's process, for its CPU time (0: not measured)")
	timeout := flag.Duration("timeout", time.Minute, "the most the whole run may take")
	flag.Parse()
	if *clients < 2 || *lines < 1 || *size < 8 || *batch < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "load: want --clients >= 2, --lines >= 1, --size >= 8, --batch >= 1 and no arguments")
		os.Exit(2)
	}
	if err := load(*addr, *clients, *lines, *size, *batch, *pid, time.Now().Add(*timeout)); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// load runs the clients and prints the result.
func load(addr string, clients, lines, size, batch, pid int, deadline time.Time) error {
	conns := make([]net.Conn, clients)
	readers := make([]*bufio.Reader, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns { // join one after the other
		c, r, err := chatclient.Join(addr, fmt.Sprintf("c%03d", i), deadline)
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		conns[i], readers[i] = c, r
	}
	want := (clients - 1) * lines
	start := make(chan struct{})
	errc := make(chan error, 2*clients)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { <-start; errc <- send(c, i, lines, size, batch) })
		wg.Go(func() { errc <- receive(readers[i], i, clients, lines) })
	}
	cpu0 := selfCPU()
	srv0, wait0 := procCPU(pid)
	t0 := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(t0)
	cpu1 := selfCPU()
	srv1, wait1 := procCPU(pid)
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	server := "not measured"
	if pid > 0 {
		server = fmt.Sprintf("%.3f s (waited %.3f s for a CPU)", (srv1 - srv0).Seconds(), (wait1 - wait0).Seconds())
	}
	fmt.Printf("chat load: %d clients x %d lines, %d deliveries in %.4f s (%.0f deliveries/s); CPU time: client %.3f s, server %s\n",
		clients, lines, clients*want, took.Seconds(), float64(clients*want)/took.Seconds(), (cpu1 - cpu0).Seconds(), server)
	return nil
}

// send writes client i's lines, "SEQ" (six digits) and filler to size bytes, batch lines per
// write.
func send(c net.Conn, i, lines, size, batch int) error {
	filler := strings.Repeat("x", size-7)
	buf := make([]byte, 0, batch*(size+1))
	for k := range lines {
		buf = fmt.Appendf(buf, "%06d %s\n", k, filler)
		if (k+1)%batch == 0 || k == lines-1 {
			if _, err := c.Write(buf); err != nil {
				return fmt.Errorf("client %d: writing: %w", i, err)
			}
			buf = buf[:0]
		}
	}
	return nil
}

// receive reads until client i has every other client's lines ("cNNN: SEQ ..."), each
// sender's in order; other lines (the joins of later clients) are skipped.
func receive(r *bufio.Reader, i, clients, lines int) error {
	next := make([]int, clients)
	for got := 0; got < (clients-1)*lines; {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("client %d: reading after %d deliveries: %w", i, got, err)
		}
		if line[0] == '*' {
			continue
		}
		from, rest, ok := bytes.Cut(line, []byte(": "))
		j, err1 := strconv.Atoi(string(from[1:]))
		k, err2 := strconv.Atoi(string(rest[:min(6, len(rest))]))
		if !ok || err1 != nil || err2 != nil || j < 0 || j >= clients || j == i || k != next[j] {
			return fmt.Errorf("client %d: read %q after %d deliveries, want another client's next line", i, line, got)
		}
		next[j]++
		got++
	}
	return nil
}

// selfCPU is the CPU time (user+sys) the process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time process pid's threads have used and the time they waited on a run
// queue for a CPU (the first two fields of each /proc/PID/task/TID/schedstat, in ns: finer than
// /proc/PID/stat's 10 ms ticks), 0 for pid 0.
func procCPU(pid int) (cpu, wait time.Duration) {
	if pid <= 0 {
		return 0, 0
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if f := strings.Fields(string(b)); len(f) > 1 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			w, _ := strconv.ParseInt(f[1], 10, 64)
			cpu, wait = cpu+time.Duration(n), wait+time.Duration(w)
		}
	}
	return cpu, wait
}
