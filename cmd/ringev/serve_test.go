package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestParseServeDefaults: each protocol has its default address, readiness API, auto backend, one
// loop; the protocol may come after the flags.
func TestParseServeDefaults(t *testing.T) {
	for _, args := range [][]string{{"resp"}, {"--loops", "1", "resp"}} {
		o, err := parseServe(args)
		if err != nil || o != (serveOptions{proto: "resp", addr: "127.0.0.1:6379", backend: "auto", api: "readiness", loops: 1}) {
			t.Errorf("%q: %+v, %v", args, o, err)
		}
	}
	o, err := parseServe([]string{"http", "--addr", "0.0.0.0:9000", "--backend", "epoll", "--api", "readiness", "--loops", "4"})
	if err != nil || o != (serveOptions{proto: "http", addr: "0.0.0.0:9000", backend: "epoll", api: "readiness", loops: 4}) {
		t.Errorf("%+v, %v", o, err)
	}
}

// TestParseServeBadInput: every bad command line is a usage error (status 2) naming the problem;
// --api requests says the requests API is not built yet.
func TestParseServeBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"which protocol"}},
		{[]string{"ftp"}, []string{`unknown protocol "ftp"`, "resp, http, echo"}},
		{[]string{"resp", "--api", "requests"}, []string{"--api", "requests API", "not built yet"}},
		{[]string{"resp", "--api", "magic"}, []string{"--api", `unknown API "magic"`}},
		{[]string{"resp", "--backend", "kqueue"}, []string{"--backend", `unknown backend "kqueue"`, "epoll"}},
		{[]string{"resp", "--loops", "0"}, []string{"--loops", "must be > 0"}},
		{[]string{"resp", "--loops", "5000"}, []string{"--loops", "must be <= 1024"}},
		{[]string{"resp", "extra"}, []string{`unexpected argument "extra"`}},
	} {
		_, err := parseServe(tc.args)
		if exitStatus(err) != 2 {
			t.Errorf("%q: %v (status %d), want a usage error", tc.args, err, exitStatus(err))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not say %q", tc.args, err, w)
			}
		}
	}
}

// TestServeAPIRequestsExits2: the command line with --api requests exits 2 with the message.
func TestServeAPIRequestsExits2(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"serve", "echo", "--api", "requests"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "not built yet") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeStopsOnSIGTERM: `ringev serve echo` serves until SIGTERM, then exits 0.
func TestServeStopsOnSIGTERM(t *testing.T) {
	r, w := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "echo", "--addr", "127.0.0.1:0"}, io.Discard, w)
		w.Close()
	}()
	lines := bufio.NewScanner(r)
	var addr string
	for addr == "" && lines.Scan() {
		if m := regexp.MustCompile(`listening on (\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	go io.Copy(io.Discard, r) // the rest of stderr
	if addr == "" {
		t.Fatal("ringev serve printed no address")
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("ping"))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	select {
	case n := <-code:
		if n != 0 {
			t.Errorf("exit status %d after SIGTERM, want 0", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ringev serve did not exit within 10 s of SIGTERM")
	}
}
