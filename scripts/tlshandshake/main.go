//go:build linux

// Command tlshandshake measures a TLS server's CPU per full handshake: it starts each server
// command given (pinned to CPU 0 with taskset), drives it from CPU 1 with Go's crypto/tls client
// (TLS 1.3, Go's default key exchange, no session cache: every handshake is a full one; each
// connection then makes one HTTP/1.1 GET and closes), and reads the server's user+sys CPU time
// from /proc before and after. Rounds alternate between the servers; it prints each round and
// the median per server, and the ratio of each median to the first server's.
//
//	tlshandshake [-n 2000] [-c 8] [-rounds 5] NAME='CMD with {port}' ...
//
// The certificate is the caller's (the commands name it): ECDSA P-256, as in the figures of
// docs/measurements/2026-12-06-tls.md (../shared/anchors/tlscert.sh makes one).
package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 2000, "handshakes per round")
	conc := flag.Int("c", 8, "clients at once")
	rounds := flag.Int("rounds", 5, "rounds per server")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: tlshandshake [-n N] [-c C] [-rounds R] NAME='CMD with {port}' ...")
		os.Exit(2)
	}
	var set unix.CPUSet // the client on CPU 1, as the servers are on CPU 0
	set.Set(1)
	runtime.LockOSThread()
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintf(os.Stderr, "tlshandshake: sched_setaffinity to CPU 1: %v\n", err)
		os.Exit(1)
	}
	type server struct{ name, cmd string }
	var servers []server
	for _, a := range flag.Args() {
		name, cmd, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "tlshandshake: %q: want NAME=CMD\n", a)
			os.Exit(2)
		}
		servers = append(servers, server{name, cmd})
	}
	per := map[string][]float64{}
	for r := range *rounds {
		for _, s := range servers {
			us, err := round(s.cmd, *n, *conc)
			if err != nil {
				fmt.Fprintf(os.Stderr, "tlshandshake: %s: %v\n", s.name, err)
				os.Exit(1)
			}
			per[s.name] = append(per[s.name], us)
			fmt.Printf("round %d %-12s %.1f µs server CPU per handshake\n", r+1, s.name, us)
		}
	}
	first := 0.0
	for i, s := range servers {
		v := slices.Clone(per[s.name])
		slices.Sort(v)
		med := v[len(v)/2]
		if i == 0 {
			first = med
		}
		fmt.Printf("median %-12s %.1f µs per handshake (%.2fx %s)\n", s.name, med, med/first, servers[0].name)
	}
}

// round starts cmd on a free port, makes n handshakes with c clients at once, and returns the
// server's CPU time per handshake, in µs.
func round(cmdline string, n, c int) (float64, error) {
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("taskset", append([]string{"-c", "0"}, strings.Fields(strings.ReplaceAll(cmdline, "{port}", strconv.Itoa(port)))...)...)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		cmd.Process.Signal(unix.SIGTERM)
		cmd.Wait()
	}()
	if err := waitListening(addr); err != nil {
		return 0, err
	}
	cfg := &tls.Config{InsecureSkipVerify: true}
	if err := handshakes(addr, cfg, 50, c); err != nil { // warm-up
		return 0, err
	}
	before, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	if err := handshakes(addr, cfg, n, c); err != nil {
		return 0, err
	}
	after, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n) / 1e3, nil
}

// handshakes makes n connections, c at once: a full handshake, a GET, the response's head.
func handshakes(addr string, cfg *tls.Config, n, c int) error {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	errc := make(chan error, c)
	for range c {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := one(addr, cfg); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}

func one(addr string, cfg *tls.Config) error {
	raw, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(raw, cfg)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "HTTP/1.1 200") {
		return fmt.Errorf("response %q", line)
	}
	return nil
}

// cpuTime is a process's user+sys CPU time, in ns (/proc/PID/stat, in ticks of USER_HZ, 100 on
// Linux: 10 ms, so a round should take seconds of CPU).
func cpuTime(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 14 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name, want utime and stime (14th, 15th)", pid, len(f))
	}
	ut, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat utime: %w", pid, err)
	}
	st, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat stime: %w", pid, err)
	}
	return (ut + st) * 1e7, nil // USER_HZ is 100 on Linux
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(addr string) error {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("%s: nothing listens within 10 s", addr)
}
