//go:build linux

package nethttp

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServerServesGoHTTPClient: Go's http.Client makes requests over kept-alive connections,
// GET and a POST whose body the handler hashes, and gets the handler's answers.
func TestServerServesGoHTTPClient(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		addr := serveRingev(t, backend, &http.Server{Handler: testHandler()})
		tr := &http.Transport{MaxIdleConnsPerHost: 4}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: waitFor}
		for i := range 20 {
			resp, err := client.Get("http://" + addr + "/big?n=" + fmt.Sprint(i*500))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || len(b) != i*500 {
				t.Fatalf("GET %d: %d bytes, %v", i, len(b), err)
			}
		}
		body := strings.Repeat("upload ", 100000)
		resp, err := client.Post("http://"+addr+"/echo", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf("n=%d sha=%x err=<nil> trailer=map[]\n", len(body), sha256.Sum256([]byte(body)))
		if string(b) != want {
			t.Fatalf("POST: got %q, want %q", b, want)
		}
	})
}
