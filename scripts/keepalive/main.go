//go:build linux

// Command keepalive drives an HTTP/1.1 server over C keep-alive connections (TLS with -tls,
// certificate not verified), every connection opened and its handshake done (4 at once) before
// anything is counted; then, for each window given, `callgrind_control -z PID`, D seconds of
// GET /plaintext at depth 1 on every connection, `callgrind_control -d PID`. It prints the
// requests of each window on one line. No connection is opened or closed inside a window, so a
// window's instructions are requests only: what ircount.sh's https mode cannot give, since each
// of its wrk runs opens its 256 connections anew (and under callgrind wrk's 2 s timeouts make it
// reconnect, a handshake each time). scripts/ircount_keepalive.sh runs it.
//
//	keepalive -addr HOST:PORT [-c 256] [-tls] [-pid PID] [-w 10,30]
package main

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "", "server")
	c := flag.Int("c", 256, "connections")
	useTLS := flag.Bool("tls", false, "TLS")
	pid := flag.Int("pid", 0, "callgrind pid (0: no callgrind_control)")
	windows := flag.String("w", "3,9", "window lengths, seconds")
	flag.Parse()
	conns := make([]net.Conn, *c)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // handshakes at once: each ends well within the server's timeout
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for try := 0; ; try++ {
				raw, err := net.DialTimeout("tcp", *addr, 60*time.Second)
				if err == nil {
					if *useTLS {
						tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"})
						tc.SetDeadline(time.Now().Add(120 * time.Second))
						err = tc.Handshake()
						tc.SetDeadline(time.Time{})
						raw = tc
					}
				}
				if err == nil {
					conns[i] = raw
					return
				}
				if try > 5 {
					fmt.Fprintln(os.Stderr, "dial:", err)
					os.Exit(1)
				}
				time.Sleep(time.Second)
			}
		}()
	}
	wg.Wait()
	var stop atomic.Bool
	var count atomic.Int64
	run := func(d time.Duration) int64 {
		stop.Store(false)
		count.Store(0)
		var wg sync.WaitGroup
		for _, cn := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := bufio.NewReader(cn)
				for !stop.Load() {
					if _, err := io.WriteString(cn, "GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
						fmt.Fprintln(os.Stderr, "write:", err)
						os.Exit(1)
					}
					cl := -1
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							fmt.Fprintln(os.Stderr, "read:", err)
							os.Exit(1)
						}
						if strings.HasPrefix(strings.ToLower(line), "content-length:") {
							cl, _ = strconv.Atoi(strings.TrimSpace(line[15:]))
						}
						if line == "\r\n" {
							break
						}
					}
					if cl < 0 {
						fmt.Fprintln(os.Stderr, "read: a response without Content-Length")
						os.Exit(1)
					}
					if _, err := io.CopyN(io.Discard, r, int64(cl)); err != nil {
						fmt.Fprintln(os.Stderr, "read body:", err)
						os.Exit(1)
					}
					count.Add(1)
				}
			}()
		}
		time.Sleep(d)
		stop.Store(true)
		wg.Wait()
		return count.Load()
	}
	ctl := func(arg string) {
		if *pid == 0 {
			return
		}
		if out, err := exec.Command("callgrind_control", arg, strconv.Itoa(*pid)).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "callgrind_control %s %d: %v\n%s", arg, *pid, err, out)
			os.Exit(1)
		}
	}
	var secs []int
	for _, w := range strings.Split(*windows, ",") {
		s, err := strconv.Atoi(w)
		if err != nil || s <= 0 {
			fmt.Fprintf(os.Stderr, "-w %q: want window lengths in seconds, such as 3,9\n", *windows)
			os.Exit(2)
		}
		secs = append(secs, s)
	}
	run(2 * time.Second) // warm-up
	var out []string
	for _, s := range secs {
		ctl("-z")
		n := run(time.Duration(s) * time.Second)
		ctl("-d")
		out = append(out, strconv.FormatInt(n, 10))
	}
	fmt.Println(strings.Join(out, " "))
}
