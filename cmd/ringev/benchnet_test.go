//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ringev/ringev/internal/bench"
)

// TestParseBenchNetDefaults: 3 rounds of 5 s and 200,000 requests, uring and epoll, the requests
// and readiness APIs.
func TestParseBenchNetDefaults(t *testing.T) {
	o, err := parseBenchNet(nil)
	if err != nil || o.rounds != 3 || o.seconds != 5 || o.requests != 200000 || !slices.Equal(o.backends, []string{"uring", "epoll"}) ||
		!slices.Equal(o.apis, []string{"requests", "readiness"}) ||
		o.slowsys != 0 || o.syscalls || o.json || o.png != "" || o.anchors != "" {
		t.Errorf("%+v, %v", o, err)
	}
}

// TestParseBenchNetBadInput: bad flags are usage errors naming the flag.
func TestParseBenchNetBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds"},
		{[]string{"--seconds", "x"}, "--seconds"},
		{[]string{"--backend", "kqueue"}, `unknown backend "kqueue"`},
		{[]string{"--api", "magic"}, `unknown API "magic"`},
		{[]string{"--slowsys", "-1"}, "--slowsys"},
		{[]string{"--png", ""}, "--png"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		_, err := parseBenchNet(tc.args)
		if exitStatus(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"bench", "net", "--anchors", t.TempDir()}, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "no net.sh there") {
		t.Errorf("--anchors without net.sh: status %d, %q", code, stderr.String())
	}
}

// TestRingevServersForNetSh: one RESP and one HTTP server per backend and API, in net.sh's
// NAME=COMMAND form with {port}; each with GOMAXPROCS=1 but the uring requests server, which
// runs as serve's defaults make it (GOMAXPROCS unset: the batching wait with its spare P).
func TestRingevServersForNetSh(t *testing.T) {
	resp, http := ringevServers("/bin/ringev", []string{"uring", "epoll"}, []string{"requests", "readiness"}, "", false)
	want := "ringev-uring-requests=env -u GOMAXPROCS /bin/ringev serve resp --addr 127.0.0.1:{port} --backend uring --api requests;" +
		"ringev-uring-readiness=env GOMAXPROCS=1 /bin/ringev serve resp --addr 127.0.0.1:{port} --backend uring --api readiness;" +
		"ringev-epoll-requests=env GOMAXPROCS=1 /bin/ringev serve resp --addr 127.0.0.1:{port} --backend epoll --api requests;" +
		"ringev-epoll-readiness=env GOMAXPROCS=1 /bin/ringev serve resp --addr 127.0.0.1:{port} --backend epoll --api readiness"
	if resp != want || http != strings.ReplaceAll(want, "serve resp", "serve http") {
		t.Errorf("RESP_SERVERS %q\nHTTP_SERVERS %q", resp, http)
	}
}

// fakeNetSh writes a net.sh that prints script's output and exits with status 1 (as the real
// one does after a complete run), and checks that it was given ringev's servers.
func fakeNetSh(t *testing.T, out string) string {
	dir := t.TempDir()
	script := "#!/usr/bin/env bash\n" +
		`case "$RESP_SERVERS;$HTTP_SERVERS" in *ringev-uring-readiness=*serve\ resp*serve\ http*) ;; *) echo "no ringev servers" >&2; exit 3;; esac` + "\n" +
		"cat <<'OUT'\n" + out + "OUT\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "net.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBenchNetReadsNetSh: the lines of net.sh become the table, the JSON and the chart; its exit
// status 1 after a complete run is not a failure.
func TestBenchNetReadsNetSh(t *testing.T) {
	dir := fakeNetSh(t, `redis PING_INLINE-c50-P1: Got 90000.00 requests/sec (p50 0.287 ms, server CPU 8.50 us/request)
ringev-uring-readiness PING_INLINE-c50-P1: Got 95000.00 requests/sec (p50 0.271 ms, server CPU 8.00 us/request)
ringev-epoll-readiness PING_INLINE-c50-P1: Got 94000.00 requests/sec (p50 0.271 ms, server CPU 9.00 us/request)
ringev-uring-requests PING_INLINE-c50-P1: Got 96000.00 requests/sec (p50 0.265 ms, server CPU 7.00 us/request)
ringev-epoll-requests PING_INLINE-c50-P1: Got 93000.00 requests/sec (p50 0.280 ms, server CPU 9.50 us/request)
`)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "net", "--anchors", dir, "--rounds", "1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("status %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"ringev-uring-readiness", "ringev-uring-requests", "vs redis", "0.94 / 1.06", "vs ringev-epoll-readiness"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	png := filepath.Join(t.TempDir(), "net.png")
	if code := run([]string{"bench", "net", "--anchors", dir, "--json", "--png", png}, &stdout, &stderr); code != 0 {
		t.Fatalf("--json: status %d\n%s", code, stderr.String())
	}
	var rep bench.NetReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Results) != 5 || rep.Regime != "plain" {
		t.Errorf("JSON: %v\n%s", err, stdout.String())
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("--png: %v", err)
	}
}

// TestBenchNetFailsWhenRingevWasNotMeasured: a ringev server without a measurement (it did not
// start) fails the run, naming it.
func TestBenchNetFailsWhenRingevWasNotMeasured(t *testing.T) {
	dir := fakeNetSh(t, `redis PING_INLINE-c50-P1: Got 90000.00 requests/sec (p50 0.287 ms, server CPU 8.50 us/request)
ringev-uring-readiness PING_INLINE-c50-P1: Got 95000.00 requests/sec (p50 0.271 ms, server CPU 8.00 us/request)
ringev-uring-requests PING_INLINE-c50-P1: Got 95000.00 requests/sec (p50 0.271 ms, server CPU 8.00 us/request)
ringev-epoll-requests PING_INLINE-c50-P1: Got 95000.00 requests/sec (p50 0.271 ms, server CPU 8.00 us/request)
`)
	var stderr bytes.Buffer
	if code := run([]string{"bench", "net", "--anchors", dir}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "ringev-epoll-readiness (no measurement)") {
		t.Errorf("status %d\n%s", code, stderr.String())
	}
}

// TestRingevServersWithBatchWait: --batch-wait D goes to ringev-uring-requests alone, and
// --unbatched adds ringev-uring-requests-nobw (--batch-wait off, GOMAXPROCS=1) right after it,
// and no other server.
func TestRingevServersWithBatchWait(t *testing.T) {
	resp, _ := ringevServers("/bin/ringev", []string{"uring", "epoll"}, []string{"requests"}, "20us", true)
	want := "ringev-uring-requests=env -u GOMAXPROCS /bin/ringev serve resp --addr 127.0.0.1:{port} --backend uring --api requests --batch-wait 20us;" +
		"ringev-uring-requests-nobw=env GOMAXPROCS=1 /bin/ringev serve resp --addr 127.0.0.1:{port} --backend uring --api requests --batch-wait off;" +
		"ringev-epoll-requests=env GOMAXPROCS=1 /bin/ringev serve resp --addr 127.0.0.1:{port} --backend epoll --api requests"
	if resp != want {
		t.Errorf("RESP_SERVERS %q\nwant %q", resp, want)
	}
	o, err := parseBenchNet([]string{"--batch-wait", "off", "--unbatched"})
	if err != nil || o.batchWait != "off" || !o.unbatched {
		t.Errorf("--batch-wait off --unbatched: %+v, %v", o, err)
	}
	if _, err := parseBenchNet([]string{"--unbatched", "--api", "readiness"}); exitStatus(err) != 2 || !strings.Contains(err.Error(), "--unbatched") {
		t.Errorf("--unbatched --api readiness: %v, want a usage error naming the flag", err)
	}
	if _, err := parseBenchNet([]string{"--batch-wait", "forever"}); exitStatus(err) != 2 || !strings.Contains(err.Error(), "--batch-wait") {
		t.Errorf("--batch-wait forever: %v, want a usage error naming the flag", err)
	}
	if _, err := parseBenchNet([]string{"--batch-wait", "50us", "--backend", "epoll"}); exitStatus(err) != 2 || !strings.Contains(err.Error(), "--batch-wait") {
		t.Errorf("--batch-wait 50us --backend epoll: %v, want a usage error naming the flag", err)
	}
}
