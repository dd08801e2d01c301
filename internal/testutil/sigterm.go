//go:build linux

package testutil

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TermFreesThePort runs the test binary as the command it tests (env=1 in its environment:
// its TestMain then calls main) with args, an address of 127.0.0.1 that was free a moment ago
// given by addrFlag, waits until it accepts a connection, holds that connection, and sends the
// process SIGTERM (what kill(1), systemd and docker stop send). The command must then exit by
// itself with status 0 within waitFor, and its port be free at once: a process that SIGTERM
// kills leaves its io_uring ring's teardown to the kernel, after the exit, and the listening
// sockets the ring's requests hold stay bound until it runs, so that a restart fails with
// EADDRINUSE. backend names the backend the command serves on: on uring, the test is skipped
// up front where io_uring is unavailable (SkipUnlessIOUring).
func TermFreesThePort(t *testing.T, env, addrFlag, backend string, waitFor time.Duration, args ...string) {
	t.Helper()
	if backend == "uring" {
		SkipUnlessIOUring(t, "the command on the uring backend")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(os.Args[0], append([]string{addrFlag, addr}, args...)...)
	cmd.Env = append(os.Environ(), env+"=1")
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var c net.Conn
	for deadline := time.Now().Add(waitFor); c == nil; time.Sleep(time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("the command exited before it served: %v, output %q", err, out.String())
		default:
		}
		c, _ = net.Dial("tcp", addr)
		if c == nil && time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("the command did not accept within %v; output %q", waitFor, out.String())
		}
	}
	defer c.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after SIGTERM the command ended with %v, want exit status 0 (a shutdown); output %q", err, out.String())
		}
	case <-time.After(waitFor):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the command did not exit within %v of SIGTERM; output %q", waitFor, out.String())
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s at once after the command exited: %v", addr, err)
	}
	l.Close()
}

// TermFreesThePortOnEachBackend is TermFreesThePort for a command with --backend and --loops
// flags, served on each backend (uring, epoll, poll: a subtest each) with one loop.
func TermFreesThePortOnEachBackend(t *testing.T, env, addrFlag string, waitFor time.Duration, args ...string) {
	t.Helper()
	for _, backend := range []string{"uring", "epoll", "poll"} {
		t.Run(backend, func(t *testing.T) {
			TermFreesThePort(t, env, addrFlag, backend, waitFor, append(args[:len(args):len(args)], "--backend", backend, "--loops", "1")...)
		})
	}
}

// MainOrTests is the TestMain of a command whose tests run it (TermFreesThePort): started
// with env=1 in its environment, the test binary is the command (main, then exit status 0);
// else it runs the tests.
func MainOrTests(m *testing.M, env string, main func()) {
	if os.Getenv(env) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
