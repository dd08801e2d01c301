//go:build linux

package nethttp

import (
	"context"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestServerServesCurl: curl's GET, HEAD, chunked upload and keep-alive across two URLs get
// the handler's answers.
func TestServerServesCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler()})
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		out, err := exec.CommandContext(ctx, curl, "-sS", "-i", "http://"+addr+"/", "http://"+addr+"/big?n=100",
			"-H", "Transfer-Encoding: chunked", "--data-binary", "uploaded", "http://"+addr+"/echo").CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v: %s", err, out)
		}
		s := string(out)
		for _, want := range []string{"\r\n\r\nhello\n", strings.Repeat("abcdefghij", 10), "n=8 sha="} {
			if !strings.Contains(s, want) {
				t.Fatalf("curl's output lacks %q:\n%s", want, s)
			}
		}
	})
}

// TestServerServesWrk: wrk's keep-alive GETs over 32 connections for a second all get 200.
func TestServerServesWrk(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed")
	}
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler()})
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		out, err := exec.CommandContext(ctx, wrk, "-t1", "-c32", "-d1s", "http://"+addr+"/").CombinedOutput()
		if err != nil {
			t.Fatalf("wrk: %v: %s", err, out)
		}
		m := regexp.MustCompile(`(\d+) requests in`).FindStringSubmatch(string(out))
		if m == nil || strings.Contains(string(out), "Non-2xx") || strings.Contains(string(out), "Socket errors") {
			t.Fatalf("wrk:\n%s", out)
		}
		if n, _ := strconv.Atoi(m[1]); n < 100 {
			t.Fatalf("wrk made %d requests in a second:\n%s", n, out)
		}
	})
}
