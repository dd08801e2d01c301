//go:build linux

package server

// Tests that Listen's error for a bad option value names the option.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringev/ringev/internal/testutil"
)

// TestListenNamesTheBadOption: a negative loop count, timeout or limit is an error naming the
// option and its value; nothing is started.
func TestListenNamesTheBadOption(t *testing.T) {
	testutil.NoLeaks(t)
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithLoops(-1), "WithLoops(-1)"},
		{WithIdleTimeout(-time.Second), "WithIdleTimeout(-1s)"},
		{WithRequestTimeout(-time.Millisecond), "WithRequestTimeout(-1ms)"},
		{WithWriteLimit(-5), "WithWriteLimit(-5)"},
		{WithDrainTimeout(-time.Minute), "WithDrainTimeout(-1m0s)"},
	} {
		e, err := Listen(context.Background(), "tcp", "127.0.0.1:0", newRecorder(), tc.opt)
		if err == nil {
			e.Close()
			e.Wait()
			t.Errorf("Listen with %s succeeded", tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %q does not name %s", err, tc.want)
		}
	}
}

// TestListenRefusesWithTLSOfNil: WithTLS(nil) (an http.Server's TLSConfig left unset) is an
// error naming it, not a server of plaintext; nothing is started.
func TestListenRefusesWithTLSOfNil(t *testing.T) {
	testutil.NoLeaks(t)
	e, err := Listen(context.Background(), "tcp", "127.0.0.1:0", newRecorder(), WithTLS(nil))
	if err == nil {
		e.Close()
		e.Wait()
		t.Fatal("Listen with WithTLS(nil) succeeded")
	}
	if !strings.Contains(err.Error(), "WithTLS(nil)") {
		t.Errorf("error %q does not name WithTLS(nil)", err)
	}
}
