//go:build linux

package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringev/ringev/internal/bench"
)

// syscallCount is what strace -c counted for one server under one workload, per request.
type syscallCount struct {
	perRequest float64
	top        map[string]float64 // the most frequent syscalls
}

// syscallWorkload is a client run whose server syscalls are counted, named as net.sh names it.
type syscallWorkload struct {
	name   string
	client func(port, anchors string) []string // the client's command line
}

var (
	respSyscallWorkloads = []syscallWorkload{
		{"PING_INLINE-c50-P1", func(port, _ string) []string {
			return []string{"redis-benchmark", "-p", port, "-q", "-n", "20000", "-c", "50", "-P", "1", "-t", "ping_inline"}
		}},
		{"PING_INLINE-c50-P16", func(port, _ string) []string {
			return []string{"redis-benchmark", "-p", port, "-q", "-n", "200000", "-c", "50", "-P", "16", "-t", "ping_inline"}
		}},
	}
	httpSyscallWorkloads = []syscallWorkload{
		{"plaintext-c256-depth1", func(port, anchors string) []string {
			return []string{"wrk", "-t1", "-c256", "-d2s", "-s", filepath.Join(anchors, "pipeline.lua"), "http://127.0.0.1:" + port + "/", "--", "1"}
		}},
		{"plaintext-c256-depth16", func(port, anchors string) []string {
			return []string{"wrk", "-t1", "-c256", "-d2s", "-s", filepath.Join(anchors, "pipeline.lua"), "http://127.0.0.1:" + port + "/", "--", "16"}
		}},
	}
)

// straceServer starts a server pinned to CPU 0 and, for each workload of its protocol, attaches
// strace -c -f to it, runs the client pinned to CPU 1, detaches, and divides the syscalls by the
// requests the client made. anchors is net.sh's directory (wrk's pipelining script).
func straceServer(ctx context.Context, s syscallServer, anchors string, progress io.Writer) (map[string]syscallCount, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	srv := exec.Command("bash", "-c", "exec taskset -c 0 "+strings.ReplaceAll(s.cmd, "{port}", port))
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer func() {
		syscall.Kill(-srv.Process.Pid, syscall.SIGTERM)
		srv.Wait()
	}()
	if err := waitListening(ctx, "127.0.0.1:"+port); err != nil {
		return nil, err
	}
	workloads := respSyscallWorkloads
	if s.http {
		workloads = httpSyscallWorkloads
	}
	counts := map[string]syscallCount{}
	for _, w := range workloads {
		c, err := straceRun(ctx, srv.Process.Pid, w.client(port, anchors))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		counts[w.name] = c
		fmt.Fprintf(progress, "strace: %s %s: %.2f syscalls/request %v\n", s.name, w.name, c.perRequest, c.top)
	}
	return counts, nil
}

// straceRun attaches strace -c -f to pid (every thread, and the processes it has started), runs
// client pinned to CPU 1, detaches and returns the syscalls per request.
func straceRun(ctx context.Context, pid int, client []string) (syscallCount, error) {
	out, err := os.CreateTemp("", "ringev-strace-*.txt")
	if err != nil {
		return syscallCount{}, err
	}
	out.Close()
	defer os.Remove(out.Name())
	args := []string{"-f", "-c", "-o", out.Name()}
	for _, p := range processTree(pid) {
		args = append(args, "-p", strconv.Itoa(p))
	}
	st := exec.Command("strace", args...)
	stderr, err := st.StderrPipe()
	if err != nil {
		return syscallCount{}, err
	}
	if err := st.Start(); err != nil {
		return syscallCount{}, fmt.Errorf("strace: %w", err)
	}
	defer func() { st.Process.Kill(); st.Wait() }()
	attached := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		sent := false
		for lines.Scan() {
			if !sent && strings.Contains(lines.Text(), "attached") {
				attached <- true
				sent = true
			}
		}
		if !sent {
			attached <- false
		}
	}()
	select {
	case ok := <-attached:
		if !ok {
			return syscallCount{}, errors.New("strace could not attach (ptrace denied?)")
		}
	case <-time.After(10 * time.Second):
		return syscallCount{}, errors.New("strace did not attach within 10 s")
	case <-ctx.Done():
		return syscallCount{}, ctx.Err()
	}
	time.Sleep(200 * time.Millisecond) // the other threads' attach messages
	run := exec.CommandContext(ctx, "taskset", append([]string{"-c", "1"}, client...)...)
	text, err := run.CombinedOutput()
	if err != nil {
		return syscallCount{}, fmt.Errorf("%s: %w\n%s", client[0], err, text)
	}
	requests, err := clientRequests(client, string(text))
	if err != nil {
		return syscallCount{}, err
	}
	st.Process.Signal(syscall.SIGINT) // strace detaches and writes its table
	st.Wait()
	table, err := os.ReadFile(out.Name())
	if err != nil {
		return syscallCount{}, err
	}
	calls, total, err := bench.ParseStraceSummary(string(table))
	if err != nil {
		return syscallCount{}, err
	}
	names := make([]string, 0, len(calls))
	for n := range calls {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(calls[b], calls[a]) })
	top := map[string]float64{}
	for _, n := range names[:min(4, len(names))] {
		top[n] = float64(calls[n]) / float64(requests)
	}
	return syscallCount{perRequest: float64(total) / float64(requests), top: top}, nil
}

// clientRequests is the number of requests a client run made: redis-benchmark's -n (it makes them
// all, or fails), wrk's "N requests in".
func clientRequests(client []string, out string) (int64, error) {
	if client[0] == "wrk" {
		m := regexp.MustCompile(`(\d+) requests in`).FindStringSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("wrk printed no request count:\n%s", out)
		}
		return strconv.ParseInt(m[1], 10, 64)
	}
	if !strings.Contains(out, "requests per second") {
		return 0, fmt.Errorf("redis-benchmark printed no rate:\n%s", out)
	}
	i := slices.Index(client, "-n")
	return strconv.ParseInt(client[i+1], 10, 64)
}

// processTree returns pid and its descendants (the worker processes of a server that forks).
func processTree(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil && !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// waitListening waits until addr accepts connections, at most 10 s.
func waitListening(ctx context.Context, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not listen on %s within 10 s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
