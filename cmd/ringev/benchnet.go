//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ringev/ringev/internal/bench"
)

const usageBenchNet = `usage: ringev bench net [--rounds N] [--seconds S] [--requests N] [--backend a,b]
                       [--api a,b] [--slowsys N] [--syscalls] [--batch-wait D|off]
                       [--unbatched] [--anchors DIR] [--json] [--png FILE]

Runs the anchors' net.sh: the network peers (redis-server 7, redcon, nginx with 1 worker, gnet
with 1 loop, Go net/http), each pinned to CPU 0 and driven by its real client pinned to CPU 1
(redis-benchmark -c 50 -P 1 and -P 16: PING_INLINE, PING_MBULK, SET, GET; wrk -t1 -c256,
HTTP/1.1 plaintext at pipelining depth 1 and 16), with ringev's servers in the same rounds:
  ringev-B-A   ringev serve resp|http --backend B --api A (GOMAXPROCS=1), except
  ringev-uring-requests   serve's defaults, GOMAXPROCS not set: the batching wait where the
               kernel has it, with the spare P serve then gives the runtime (GOMAXPROCS 2)
  ringev-uring-requests-nobw   the same with --batch-wait off and GOMAXPROCS=1 (--unbatched)
for each backend B and API A (requests: completion I/O, in its default receive mode;
readiness: fd events and non-blocking read/write). Prints one table: the medians of the rounds
of requests/s, p50, p99, the server's CPU µs per request, the share of a core it used (below
%d %%: the client was the bottleneck), syscalls per request (--syscalls), then each ringev
server's ratios to every other server of its workload, with the lowest and highest CPU ratio
of a single round (the machine's noise; --json has every round's).

flags:
  --rounds N      interleaved rounds, N > 0 (default 3)
  --seconds S     seconds per wrk run, S > 0 (default 5)
  --requests N    requests per redis-benchmark test, N > 0 (default 200000)
                  (net.sh counts CPU in 1/100 s ticks: a -P 16 test's CPU per request is
                  good to about ±20 %% at 200000 and ±5 %% at 1000000; the table names the
                  workloads whose ratios are coarse)
  --backend a,b   ringev's backends (default uring,epoll; known: %s)
  --api a,b       ringev's APIs (default requests,readiness)
  --slowsys N     run every server (not the clients) under the anchors' slowsys N: syscall
                  entries made slower, the regime of machines with page-table isolation
                  (slowsys 3000: ~0.6 µs a syscall); needs $ANCHORS_BIN/slowsys
                  (default /tmp/ringev-anchors), built by the anchors' run.sh
  --syscalls      also count syscalls per request with strace -c -f: ringev's servers and
                  redis-server (and gnet when net.sh has built it), each in a run of its own
                  after net.sh's (PING_INLINE -P 1/16, plaintext depth 1/16), strace attached
                  once the server is up; strace slows the server, which changes batching a
                  little, so take the counts as close, not exact
  --batch-wait D  ringev-uring-requests's serve --batch-wait: D (io_uring's min_wait: a
                  sleeping loop waits up to D for 16 completions) or off (default: serve's
                  own, 50us where the kernel has min_wait; still pinned to one CPU)
  --unbatched     also run ringev-uring-requests-nobw: uring, requests API, serve
                  --batch-wait off, GOMAXPROCS=1
  --anchors DIR   the directory of net.sh (default: ../shared/anchors beside the repository,
                  found from the working directory)
  --json          print the report as JSON instead of the table
  --png FILE      also draw each server's CPU per request relative to redis / nginx as a PNG

net.sh installs redis-server, redis-tools, wrk and nginx-light from Debian if they are missing
and builds its Go peers (needs go). Its lines are echoed on stderr as they come. SIGINT or
SIGTERM stops net.sh and its servers, prints nothing and exits 130 or 143.
`

// benchNetOptions is the parsed command line of `ringev bench net`.
type benchNetOptions struct {
	rounds, seconds, requests int
	backends                  []string
	apis                      []string
	slowsys                   int // 0: the plain regime
	syscalls                  bool
	anchors                   string // "": find it
	json                      bool
	png                       string
	batchWait                 string // --batch-wait: "" serve's default
	unbatched                 bool   // --unbatched: also ringev-uring-requests-nobw
}

// netBackends are the backends --backend accepts: those of `ringev serve`.
var netBackends = []string{"uring", "epoll", "poll", "uring-poll"}

// netAPIs are the APIs --api accepts: those of `ringev serve`.
var netAPIs = []string{"requests", "readiness"}

func benchNetUsage() string {
	return fmt.Sprintf(usageBenchNet, bench.ClientBoundPercent, strings.Join(netBackends, ","))
}

// parseBenchNet parses the arguments of `ringev bench net`.
func parseBenchNet(args []string) (benchNetOptions, error) {
	o := benchNetOptions{rounds: 3, seconds: 5, requests: 200000, backends: []string{"uring", "epoll"}, apis: netAPIs}
	fs := newFlagSet("ringev bench net")
	count := func(dst *int) func(string) error {
		return func(s string) error {
			n, err := parseCount(s)
			if err == nil && n > 1<<31-1 {
				err = errors.New("out of range")
			}
			*dst = int(n)
			return err
		}
	}
	fs.Func("rounds", "rounds", count(&o.rounds))
	fs.Func("seconds", "seconds per wrk run", count(&o.seconds))
	fs.Func("requests", "requests per redis-benchmark test", count(&o.requests))
	fs.Func("slowsys", "slowsys N", count(&o.slowsys))
	fs.Func("backend", "backends", func(s string) error {
		names, err := splitList(s, netBackends, "backend")
		o.backends = names
		return err
	})
	fs.Func("api", "APIs", func(s string) error {
		names, err := splitList(s, netAPIs, "API")
		o.apis = names
		return err
	})
	fs.Func("batch-wait", "the batching wait of ringev-uring-requests", func(s string) error {
		_, err := parseBatchWait(s)
		o.batchWait = s
		return err
	})
	fs.BoolVar(&o.unbatched, "unbatched", false, "also ringev-uring-requests-nobw")
	fs.BoolVar(&o.syscalls, "syscalls", false, "count syscalls")
	fs.Func("anchors", "anchors directory", nonEmpty(&o.anchors, "directory"))
	fs.BoolVar(&o.json, "json", false, "JSON")
	fs.Func("png", "PNG chart file", nonEmpty(&o.png, "file"))
	if err := parseOnlyFlags(fs, args, "bench net"); err != nil {
		return o, err
	}
	if (o.batchWait != "" || o.unbatched) && (!slices.Contains(o.backends, "uring") || !slices.Contains(o.apis, "requests")) {
		flag := "--batch-wait"
		if o.unbatched {
			flag = "--unbatched"
		}
		return o, &usageError{flag + " is for the uring requests server (ringev-uring-requests): --backend must list uring and --api requests"}
	}
	return o, nil
}

// findNetSh returns the path of net.sh: in dir when given (--anchors), else in shared/anchors
// beside the repository that holds the working directory (../shared/anchors), or beside one of
// the directories above it (a git worktree kept in a subdirectory).
func findNetSh(dir string) (string, error) {
	if dir != "" {
		p := filepath.Join(dir, "net.sh")
		if _, err := os.Stat(p); err != nil {
			return "", &usageError{fmt.Sprintf("--anchors %s: no net.sh there: %v", dir, err)}
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	repo := ""
	for d := wd; repo == ""; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(mod), "module github.com/ringev/ringev\n") {
			repo = d
		} else if filepath.Dir(d) == d {
			return "", fmt.Errorf("the working directory %s is not inside the ringev repository, so ../shared/anchors cannot be found; give --anchors DIR", wd)
		}
	}
	for d := filepath.Dir(repo); ; d = filepath.Dir(d) {
		if p := filepath.Join(d, "shared", "anchors", "net.sh"); fileExists(p) {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no shared/anchors/net.sh beside the repository %s or above it; give --anchors DIR", repo)
		}
	}
}

// anchorsBin is where the anchors' programs are built ($ANCHORS_BIN, as net.sh and run.sh read it).
func anchorsBin() string {
	if d := os.Getenv("ANCHORS_BIN"); d != "" {
		return d
	}
	return "/tmp/ringev-anchors"
}

// ringevServer is one of ringev's servers in a bench net run: its name in net.sh's lines and
// its command, with %s for the protocol (resp, http) and {port}.
type ringevServer struct{ name, cmd string }

// ringevServerList returns ringev's servers: one per backend and API, each with GOMAXPROCS=1
// but ringev-uring-requests, which runs with serve's defaults and GOMAXPROCS unset (serve gives
// a batching loop its spare P) and with --batch-wait batchWait unless that is ""; with
// unbatched, ringev-uring-requests-nobw (--batch-wait off, GOMAXPROCS=1) after it.
func ringevServerList(exe string, backends, apis []string, batchWait string, unbatched bool) []ringevServer {
	var list []ringevServer
	for _, b := range backends {
		for _, api := range apis {
			cmd := fmt.Sprintf("%s serve %%s --addr 127.0.0.1:{port} --backend %s --api %s", exe, b, api)
			if b != "uring" || api != "requests" {
				list = append(list, ringevServer{"ringev-" + b + "-" + api, "env GOMAXPROCS=1 " + cmd})
				continue
			}
			def := "env -u GOMAXPROCS " + cmd
			if batchWait != "" {
				def += " --batch-wait " + batchWait
			}
			list = append(list, ringevServer{"ringev-uring-requests", def})
			if unbatched {
				list = append(list, ringevServer{"ringev-uring-requests-nobw", "env GOMAXPROCS=1 " + cmd + " --batch-wait off"})
			}
		}
	}
	return list
}

// ringevServers returns the RESP_SERVERS and HTTP_SERVERS entries for ringev's servers: one per
// backend and API, "NAME=COMMAND" joined by ';'.
func ringevServers(exe string, backends, apis []string, batchWait string, unbatched bool) (resp, http string) {
	var r, h []string
	for _, s := range ringevServerList(exe, backends, apis, batchWait, unbatched) {
		r = append(r, s.name+"="+fmt.Sprintf(s.cmd, "resp"))
		h = append(h, s.name+"="+fmt.Sprintf(s.cmd, "http"))
	}
	return strings.Join(r, ";"), strings.Join(h, ";")
}

func runBenchNet(args []string, stdout, stderr io.Writer) int {
	const name = "ringev bench net"
	o, err := parseBenchNet(args)
	if err == nil {
		o.anchors, err = findNetSh(o.anchors)
	}
	if err != nil {
		return badArgs(name, benchNetUsage(), err, stdout, stderr)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "%s: finding ringev's own binary for the servers: %v\n", name, err)
		return 1
	}
	regime := "plain"
	wrap := ""
	if o.slowsys > 0 {
		slow := filepath.Join(anchorsBin(), "slowsys")
		if _, err := os.Stat(slow); err != nil {
			fmt.Fprintf(stderr, "%s: --slowsys: %s is missing: run %s once to build it\n", name, slow, filepath.Join(filepath.Dir(o.anchors), "run.sh"))
			return 1
		}
		regime, wrap = fmt.Sprintf("slowsys %d", o.slowsys), fmt.Sprintf("%s %d", slow, o.slowsys)
	}
	png, ok := createPNG(name, o.png, stderr)
	if !ok {
		return 1
	}
	stop, caught := notifyStop(syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	samples, runErr := runNetSh(ctx, o, exe, wrap, stderr)
	var results []bench.NetResult
	if runErr == nil {
		results = bench.SummarizeNet(samples)
		bench.SetCPUResolution(results, o.requests, o.seconds)
		if o.syscalls {
			runErr = countSyscalls(ctx, exe, o.backends, o.apis, o.batchWait, o.unbatched, filepath.Dir(o.anchors), results, stderr)
		}
	}
	if sig := caught(); sig != nil {
		png.discard()
		fmt.Fprintf(stderr, "%s: interrupted by %s: nothing written\n", name, signalName(sig))
		return 128 + int(sig.(syscall.Signal))
	}
	cancel()
	if runErr != nil {
		png.discard()
		fmt.Fprintf(stderr, "%s: %v\n", name, runErr)
		return 1
	}
	if len(results) == 0 {
		png.discard()
		fmt.Fprintf(stderr, "%s: net.sh printed no measurement\n", name)
		return 1
	}
	report := bench.NetReport{Results: results, Ratios: bench.NetRatios(results), Regime: regime}
	if png != nil {
		if err := png.write(func(w io.Writer) error { return bench.WriteNetPNG(w, results, regime) }); err != nil {
			fmt.Fprintf(stderr, "%s: --png: %v\n", name, err)
			return 1
		}
	}
	if o.json {
		err = bench.WriteNetJSON(stdout, report)
	} else {
		fmt.Fprintf(stdout, "ringev bench net, %s regime, %d round(s):\n", regime, o.rounds)
		err = bench.WriteNetTable(stdout, report.Results, report.Ratios)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: writing the results: %v\n", name, err)
		return 1
	}
	return 0
}

// runNetSh runs net.sh with ringev's servers added and returns its measurements. Its stderr, and
// each of its lines as it comes, go to progress. Cancelling ctx stops it and its servers (its
// process group).
//
// net.sh exits with status 1 even after a complete run (its EXIT trap kills the server it has
// already stopped, under set -e), so its status alone decides nothing: the run has failed when a
// server did not start, when one of ringev's servers has no measurement, or when there is none.
func runNetSh(ctx context.Context, o benchNetOptions, exe, wrap string, progress io.Writer) ([]bench.NetSample, error) {
	resp, http := ringevServers(exe, o.backends, o.apis, o.batchWait, o.unbatched)
	cmd := exec.Command("bash", o.anchors, strconv.Itoa(o.rounds), strconv.Itoa(o.seconds))
	cmd.Env = append(os.Environ(), "RESP_SERVERS="+resp, "HTTP_SERVERS="+http, "REDIS_N="+strconv.Itoa(o.requests),
		"SERVER_WRAP="+wrap, "PATH="+os.Getenv("PATH")+string(os.PathListSeparator)+"/usr/local/go/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.anchors, err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // net.sh, its server and its client
		case <-done:
		}
	}()
	notStarted := make(chan []string, 1)
	go func() { // net.sh's stderr, passed on; "NAME did not start" lines are kept
		var names []string
		lines := bufio.NewScanner(errOut)
		for lines.Scan() {
			fmt.Fprintln(progress, lines.Text())
			if n, ok := strings.CutSuffix(lines.Text(), " did not start"); ok {
				names = append(names, strings.TrimPrefix(n, "net.sh: "))
			}
		}
		notStarted <- names
	}()
	var samples []bench.NetSample
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		fmt.Fprintf(progress, "net.sh: %s\n", line)
		if s, ok := bench.ParseNetLine(line); ok {
			samples = append(samples, s)
		} else if strings.Contains(line, ": Got ") {
			fmt.Fprintf(progress, "net.sh: (not counted: a measurement without its figures)\n")
		}
	}
	failed := <-notStarted
	err = cmd.Wait()
	close(done)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, rs := range ringevServerList("", o.backends, o.apis, o.batchWait, o.unbatched) {
		name := rs.name
		if !slices.ContainsFunc(samples, func(s bench.NetSample) bool { return s.Server == name }) && !slices.Contains(failed, name) {
			failed = append(failed, name+" (no measurement)")
		}
	}
	switch {
	case len(failed) > 0:
		return samples, fmt.Errorf("%s: servers that did not start or were not measured: %s", o.anchors, strings.Join(failed, ", "))
	case len(samples) == 0:
		return nil, fmt.Errorf("%s printed no measurement (%v)", o.anchors, err)
	case err != nil:
		fmt.Fprintf(progress, "(net.sh ended with %v after %d measurements: its EXIT trap fails once its last server is stopped; the run is complete)\n", err, len(samples))
	}
	return samples, nil
}

// syscallServer is a server whose syscalls --syscalls counts.
type syscallServer struct {
	name, cmd string // cmd has {port}
	http      bool
}

// countSyscalls counts, with strace -c -f, the syscalls per request of ringev's servers and of
// redis-server (and gnet when its binary is there) under the workloads of net.sh it can repeat,
// and puts the figures into the matching results. anchors is net.sh's directory.
func countSyscalls(ctx context.Context, exe string, backends, apis []string, batchWait string, unbatched bool, anchors string, results []bench.NetResult, progress io.Writer) error {
	if _, err := exec.LookPath("strace"); err != nil {
		return errors.New("--syscalls needs strace (Debian package strace)")
	}
	var servers []syscallServer
	for _, rs := range ringevServerList(exe, backends, apis, batchWait, unbatched) {
		for _, proto := range []string{"resp", "http"} {
			servers = append(servers, syscallServer{rs.name, fmt.Sprintf(rs.cmd, proto), proto == "http"})
		}
	}
	servers = append(servers, syscallServer{"redis", "redis-server --port {port} --save '' --appendonly no --bind 127.0.0.1 --protected-mode no --loglevel warning", false})
	if gnet := filepath.Join(anchorsBin(), "netpeers"); fileExists(gnet) {
		servers = append(servers, syscallServer{"gnet-1loop", "env GOMAXPROCS=1 " + gnet + " gnet-http 127.0.0.1:{port}", true})
	}
	for _, s := range servers {
		counts, err := straceServer(ctx, s, anchors, progress)
		if err != nil {
			return fmt.Errorf("--syscalls, %s: %w", s.name, err)
		}
		for i := range results {
			if c, ok := counts[results[i].Workload]; ok && results[i].Server == s.name {
				results[i].SyscallsPerRequest, results[i].Syscalls = c.perRequest, c.top
			}
		}
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
