//go:build linux

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/server"
)

const usageServe = `usage: ringev serve resp|http|echo [--addr HOST:PORT] [--backend B]
                                   [--api requests|readiness] [--recv multishot|per-conn] [--loops N]
                                   [--batch-wait DURATION [--batch N]]
                                   [--request-timeout D] [--idle-timeout D]
                                   [--tls-cert FILE --tls-key FILE]

Serves a protocol on ringev's loop until SIGINT or SIGTERM:
  resp   a small Redis (RESP2, inline commands, pipelining, an in-memory keyspace) with the
         commands redis-benchmark's default run sends (default address 127.0.0.1:6379)
  http   HTTP/1.1 plaintext by TechEmpower's rules: GET /plaintext or / answers
         "Hello, World!" (default address 127.0.0.1:8080)
  echo   every byte back (default address 127.0.0.1:7007)

flags:
  --addr HOST:PORT  where to listen (port 0: any free port, printed on stderr)
  --backend B       the loops' backend: auto (default), %s;
                    with auto, a fallback from uring is said on stderr with the reason
  --api A           %s (default) or %s:
                    requests: completion I/O (multishot accept, recv, send, close as
                      requests; SQEs on uring, emulated on epoll and poll)
                    readiness: fd events and the loop's non-blocking read/write
  --recv M          the requests API's receives: multishot (default): a multishot recv
                    into the loop's provided buffers (an idle connection owns none; Linux
                    6.0 on uring, else per-conn with a note unless --recv names it);
                    per-conn: one recv at a time into a 4 KiB buffer of each connection's own
  --loops N         N loops, each on its own OS thread with its own SO_REUSEPORT
                    listening socket, 1..%d (default 1)
  --batch-wait D    the requests API on uring: a loop that sleeps with requests in the kernel
                    waits up to D (whole µs, e.g. 50us; at most 1s) for --batch
                    completions before it wakes for fewer (io_uring's min_wait, Linux 6.12):
                    fewer wake-ups and enters per request, up to D more latency for each
                    completion waited for (a new connection's first reply waits for its
                    accept and its recv: up to 2×D); also for SIGINT/SIGTERM; a wait that
                    gathers fewer than 3 backs off for a while, so a light load is not
                    delayed; off: no batching wait (ringev.WithBatchWait)
                    Default: %v for %d on uring where the kernel has min_wait
                    (ringev.CheckBatchWait) and the environment's GOMAXPROCS, if set, leaves
                    a spare P; otherwise off, and the first line says why
                    With a batching wait, unless the environment sets GOMAXPROCS (to a
                    positive number: the runtime ignores any other value), the runtime gets
                    a spare P (GOMAXPROCS N+1 for N loops): at GOMAXPROCS 1 the runtime's
                    monitor takes the P of a loop that sleeps in the kernel across its tick
                    and wakes a thread to hold it, which costs more than the batch saves
  --batch N         completions a batching wait waits for, 1..1024 (default %d; without
                    --batch-wait it sizes the default batching wait)
  --request-timeout D
                    a connection whose request is not complete within D of its first
                    byte is closed, however slowly the bytes come (a slowloris client is
                    cut off at D); a duration such as 10s, or off. Default: 10s for http,
                    off for resp (as Redis) and echo
  --idle-timeout D  a connection on which nothing was received or sent for D is closed;
                    a duration such as 75s, or off. Default: 75s for http (nginx's
                    keepalive_timeout), off for resp (Redis keeps idle clients: its
                    timeout 0) and echo
  --tls-cert FILE   serve TLS (crypto/tls) with this PEM certificate (chain) and
  --tls-key FILE    its PEM private key: the handshake runs on a bounded pool of
                    goroutines within the request timeout (10s when off), the records on
                    the loop; plaintext HTTP to an http server's TLS port gets net/http's
                    400 answer

On SIGINT or SIGTERM the server stops accepting, serves what its connections have sent,
writes the replies, closes them and exits 0. The close lingers: the server shuts its side
down and gives the client up to 1 s to close its own, so a client that keeps an idle
connection open delays the exit by up to 1 s (connections still open after 5 s are closed; a
second SIGINT or SIGTERM closes them at once).
`

// maxLoops bounds --loops.
const maxLoops = 1024

// serveDrainTimeout bounds serve's graceful shutdown on SIGINT or SIGTERM: connections still
// open after it are closed.
const serveDrainTimeout = 5 * time.Second

// serveOptions is the parsed command line of `ringev serve`.
type serveOptions struct {
	proto   string
	addr    string
	backend string
	api     string
	recv    string
	loops   int
	// batchWait, batch: --batch-wait (0: off) and --batch (ringev.WithBatchWait)
	batchWait time.Duration
	batch     int
	// batchAuto: no --batch-wait, the requests API, backend auto or uring: the batching wait is
	// defaultBatchWait where the kernel and GOMAXPROCS allow it (autoBatchOff), decided at start
	batchAuto bool
	// request, idle: --request-timeout and --idle-timeout (0: none), the protocol's defaults
	// (serveTimeouts) unless given
	request, idle time.Duration
	// tlsCert, tlsKey: --tls-cert and --tls-key (both or neither)
	tlsCert, tlsKey string
}

// serveTimeouts are the protocols' default --request-timeout and --idle-timeout: HTTP's
// (server.NewHTTP's), none for RESP (Redis keeps idle clients) and echo.
var serveTimeouts = map[string][2]time.Duration{
	"http": {server.DefaultHTTPRequestTimeout, server.DefaultHTTPIdleTimeout},
}

// defaultBatchWait and defaultBatch are serve's batching wait when --batch-wait is not given
// (and --batch's default): 50 µs for 16 completions (docs/serve.md, "The batching wait").
const (
	defaultBatchWait = 50 * time.Microsecond
	defaultBatch     = 16
)

// checkBatchWait is ringev.CheckBatchWait; tests play a kernel without min_wait with it.
var checkBatchWait = ringev.CheckBatchWait

// envGOMAXPROCS is the environment's GOMAXPROCS as the Go runtime reads it (runtime/proc.go:
// strconv.ParseInt(env, 10, 32), taken when above 0): set for "2" or "+2"; the runtime ignores
// any other value ("", "abc", "0", "-1", " 2", one over int32) and chooses GOMAXPROCS itself,
// and so does serve.
func envGOMAXPROCS(env string) (n int, set bool) {
	v, err := strconv.ParseInt(env, 10, 32)
	if err != nil || v <= 0 {
		return 0, false
	}
	return int(v), true
}

// autoBatchOff tells why serve's default batching wait is off for loops loops, with env the
// environment's GOMAXPROCS (envGOMAXPROCS: a value the runtime ignores counts as unset) and
// check ringev.CheckBatchWait: "" when it is on.
func autoBatchOff(loops int, env string, check func() error) string {
	if n, set := envGOMAXPROCS(env); set && n < loops+1 {
		return fmt.Sprintf("GOMAXPROCS=%d in the environment leaves no spare P for %d loop(s); a batching wait needs GOMAXPROCS %d (see --batch-wait)", n, loops, loops+1)
	}
	if err := check(); err != nil {
		return err.Error()
	}
	return ""
}

// defaultAPI is --api's default: the library's (server.DefaultAPI, whose doc says why).
const defaultAPI = server.DefaultAPI

// serveProtocols are the protocols of `ringev serve` and their default addresses.
var serveProtocols = map[string]string{"resp": "127.0.0.1:6379", "http": "127.0.0.1:8080", "echo": "127.0.0.1:7007"}

func serveUsage() string {
	other := server.APIRequests
	if defaultAPI == server.APIRequests {
		other = server.APIReadiness
	}
	return fmt.Sprintf(usageServe, strings.Join(ringev.Backends(), ", "), defaultAPI, other, maxLoops,
		defaultBatchWait, defaultBatch, defaultBatch)
}

// parseServe parses the arguments of `ringev serve`: flag.ErrHelp for -h/--help, a *usageError
// naming the flag or argument for anything it rejects.
func parseServe(args []string) (serveOptions, error) {
	o := serveOptions{backend: "auto", api: defaultAPI, loops: 1} // recv "": server.DefaultRecv
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		o.proto, args = args[0], args[1:]
	}
	fs := newFlagSet("ringev serve")
	fs.Func("addr", "where to listen", func(s string) error {
		if err := checkAddr(s); err != nil {
			return err
		}
		o.addr = s
		return nil
	})
	fs.Func("backend", "backend", oneOf(&o.backend, "backend", append([]string{"auto"}, ringev.Backends()...)...))
	fs.Func("api", "I/O API", oneOf(&o.api, "API", server.APIRequests, server.APIReadiness))
	fs.Func("recv", "the requests API's receives", oneOf(&o.recv, "receive mode", server.RecvMultishot, server.RecvPerConn))
	fs.Func("batch-wait", "the batching wait", func(s string) (err error) {
		o.batchWait, err = parseBatchWait(s)
		return err
	})
	fs.Func("batch", "completions a batching wait waits for", func(s string) error {
		n, err := parseCount(s)
		if err == nil && n > 1024 {
			err = errors.New("must be <= 1024")
		}
		o.batch = int(n)
		return err
	})
	requestSet, idleSet := false, false
	fs.Func("request-timeout", "request timeout", func(s string) (err error) {
		o.request, err = parseTimeout(s)
		requestSet = true
		return err
	})
	fs.Func("idle-timeout", "idle timeout", func(s string) (err error) {
		o.idle, err = parseTimeout(s)
		idleSet = true
		return err
	})
	fs.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate (PEM)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "TLS private key (PEM)")
	fs.Func("loops", "number of loops", func(s string) error {
		n, err := parseCount(s)
		if err == nil && n > maxLoops {
			err = fmt.Errorf("must be <= %d", maxLoops)
		}
		o.loops = int(n)
		return err
	})
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if o.proto == "" && fs.NArg() > 0 { // the protocol after the flags
		o.proto = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return o, &usageError{doubleDash(err.Error())}
		}
	}
	if o.proto == "" {
		return o, &usageError{"which protocol? resp, http or echo"}
	}
	if _, ok := serveProtocols[o.proto]; !ok {
		return o, &usageError{fmt.Sprintf("unknown protocol %q (known: resp, http, echo)", o.proto)}
	}
	if fs.NArg() > 0 {
		return o, &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	set := map[string]bool{} // the flags given
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.api != server.APIRequests && set["recv"] {
		return o, &usageError{fmt.Sprintf("--recv %s: only the %s API has receive modes, and --api is %s", o.recv, server.APIRequests, o.api)}
	}
	batchFlag := "" // the batching flag given that needs a batching wait, for the errors below
	switch {
	case o.batchWait > 0:
		batchFlag = "--batch-wait"
	case set["batch"]:
		batchFlag = "--batch"
	}
	if batchFlag != "" && o.api != server.APIRequests {
		return o, &usageError{fmt.Sprintf("%s: only the %s API batches completions, and --api is %s", batchFlag, server.APIRequests, o.api)}
	}
	if batchFlag != "" && o.backend != "auto" && o.backend != "uring" {
		return o, &usageError{fmt.Sprintf("%s: only the uring backend has a batching wait, and --backend is %s", batchFlag, o.backend)}
	}
	if set["batch"] && set["batch-wait"] && o.batchWait == 0 {
		return o, &usageError{"--batch: --batch-wait is off, so there is no batching wait to size"}
	}
	// Without --batch-wait the default batching wait applies where it can (autoBatchOff, at
	// start); --batch alone sizes it.
	o.batchAuto = !set["batch-wait"] && o.api == server.APIRequests && (o.backend == "auto" || o.backend == "uring")
	if !set["batch"] && (o.batchAuto || o.batchWait > 0) {
		o.batch = defaultBatch
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return o, &usageError{"--tls-cert and --tls-key go together"}
	}
	if o.addr == "" {
		o.addr = serveProtocols[o.proto]
	}
	if !requestSet {
		o.request = serveTimeouts[o.proto][0]
	}
	if !idleSet {
		o.idle = serveTimeouts[o.proto][1]
	}
	return o, nil
}

// parseTimeout parses a --request-timeout or --idle-timeout value: "off" or 0 (none), or a
// positive duration.
func parseTimeout(s string) (time.Duration, error) {
	if s == "off" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (e.g. 10s, 500ms) nor off")
	}
	if d < 0 {
		return 0, errors.New("must not be negative (0 or off: none)")
	}
	return d, nil
}

// parseBatchWait parses a --batch-wait value (serve's, and bench net's): "off" (0), or a
// duration from 1µs (the kernel's unit) to 1s, as ringev.WithBatchWait takes.
func parseBatchWait(s string) (time.Duration, error) {
	if s == "off" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (e.g. 50us, 1ms) nor off")
	}
	if d < time.Microsecond || d > time.Second {
		return 0, errors.New("must be 1us..1s")
	}
	if d%time.Microsecond != 0 {
		return 0, errors.New("must be whole microseconds (the kernel's min_wait is in µs)")
	}
	return d, nil
}

// checkAddr checks an --addr value before anything listens: HOST:PORT (HOST may be empty: every
// address; PORT a number 0..65535 or a service name); a bad one is a usage error, not a failed
// start.
func checkAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return fmt.Errorf("%s: want HOST:PORT, e.g. 127.0.0.1:7007 or :0", ae.Err)
		}
		return err
	}
	if port == "" {
		return errors.New("no port: want HOST:PORT, e.g. 127.0.0.1:7007 or :0")
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return fmt.Errorf("port %d: must be 0..65535", n)
		}
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q: not a number 0..65535 nor a known service", port)
	}
	return nil
}

// newHandler returns the handler of `ringev serve`'s protocol, with o's timeouts, and the
// engine options it needs: the loops of one RESP server share its keyspace; echo, which has no
// timeouts of its own, gets the engine's.
func newHandler(o serveOptions) (server.Handler, []server.Option) {
	switch o.proto {
	case "resp":
		h := server.NewRESP(server.NewKeyspace())
		h.RequestTimeout, h.IdleTimeout = o.request, o.idle
		return h, nil
	case "http":
		h := server.NewHTTP()
		h.RequestTimeout, h.IdleTimeout = o.request, o.idle
		return h, nil
	}
	return server.Echo{}, []server.Option{server.WithRequestTimeout(o.request), server.WithIdleTimeout(o.idle)}
}

func runServe(args []string, stdout, stderr io.Writer) int {
	o, err := parseServe(args)
	if err != nil {
		return badArgs("ringev serve", serveUsage(), err, stdout, stderr)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	batchOff := "" // why the default batching wait is off
	if o.batchAuto {
		if batchOff = autoBatchOff(o.loops, os.Getenv("GOMAXPROCS"), checkBatchWait); batchOff == "" {
			o.batchWait = defaultBatchWait // o.batch: --batch or defaultBatch
		}
	}
	var loopOpts []ringev.Option
	if o.batchWait > 0 {
		loopOpts = append(loopOpts, ringev.WithBatchWait(o.batch, o.batchWait))
	}
	h, hopts := newHandler(o)
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "ringev serve %s: TLS certificate %s, key %s: %v\n", o.proto, o.tlsCert, o.tlsKey, err)
			return 1
		}
		hopts = append(hopts, server.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := server.Listen(ctx, "tcp", o.addr, h, append([]server.Option{
		server.WithLoopOptions(loopOpts...),
		server.WithBackend(o.backend),
		server.WithAPI(o.api),
		server.WithRecv(o.recv),
		server.WithLoops(o.loops),
		server.WithDrainTimeout(serveDrainTimeout),
		server.WithLogf(func(format string, args ...any) { fmt.Fprintf(stderr, "ringev serve: "+format+"\n", args...) }),
	}, hopts...)...)
	if err != nil {
		fmt.Fprintf(stderr, "ringev serve %s: %v\n", o.proto, err)
		return 1
	}
	api := o.api + " API"
	if o.api == server.APIRequests {
		api += ", " + srv.Recv() + " recv"
	}
	switch {
	case o.batchWait > 0 && srv.Backend() == "uring":
		procs := "" // where GOMAXPROCS comes from, when serve did not leave it to the runtime
		if _, set := envGOMAXPROCS(os.Getenv("GOMAXPROCS")); set {
			procs = " (from the environment)"
		} else if runtime.GOMAXPROCS(0) < o.loops+1 {
			runtime.GOMAXPROCS(o.loops + 1) // a spare P: see --batch-wait in the usage
			procs = fmt.Sprintf(" (a spare P for %d loop(s))", o.loops)
		}
		if runtime.GOMAXPROCS(0) < o.loops+1 {
			procs += ": no spare P, which costs more than the batch saves (see --batch-wait)"
		}
		api += fmt.Sprintf(", batching wait %v for %d, GOMAXPROCS %d%s", o.batchWait, o.batch, runtime.GOMAXPROCS(0), procs)
	case srv.Backend() != "uring" && (o.batchWait > 0 || o.batchAuto): // auto fell back: the others have none
		api += fmt.Sprintf(", no batching wait: the %s backend has none", srv.Backend())
	case batchOff != "" && srv.Backend() == "uring":
		api += ", no batching wait: " + batchOff
	case o.api == server.APIRequests && srv.Backend() == "uring": // --batch-wait off
		api += ", no batching wait (--batch-wait off)"
	}
	if o.tlsCert != "" {
		api += ", TLS"
	}
	fmt.Fprintf(stderr, "ringev serve %s: listening on %s (backend %s, %d loop(s), %s)\n",
		o.proto, srv.Addr().String(), srv.Backend(), o.loops, api)
	ended := make(chan error, 1)
	go func() { ended <- srv.Wait() }()
	select {
	case sig := <-sigs:
		fmt.Fprintf(stderr, "ringev serve %s: %s: finishing %d connection(s)\n", o.proto, signalName(sig), srv.Conns())
		stop() // the graceful shutdown, bounded by serveDrainTimeout
		select {
		case err = <-ended:
		case sig = <-sigs: // a second signal: no more waiting for slow peers
			fmt.Fprintf(stderr, "ringev serve %s: %s again: closing %d connection(s) now\n", o.proto, signalName(sig), srv.Conns())
			srv.Close()
			err = <-ended
		}
	case err = <-ended:
	}
	if err != nil {
		fmt.Fprintf(stderr, "ringev serve %s: %v\n", o.proto, err)
		return 1
	}
	return 0
}
