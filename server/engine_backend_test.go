//go:build linux

package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ringev/ringev/internal/testutil"
	"golang.org/x/sys/unix"
)

// deniedEngineEnv asks a re-executed test binary to deny a system call (testutil.RunDenied).
const deniedEngineEnv = "RINGEV_TEST_SERVER_DENIED_CHILD"

// TestEngineLogsAutoFallbackFromIOUring: with io_uring_setup denied (EPERM, as sysctl
// kernel.io_uring_disabled=2 or Docker's seccomp profile make it), an engine on the backend
// "auto" serves on epoll and tells WithLogf so, once, naming the errno; Listen and NewEngine,
// with either driver.
func TestEngineLogsAutoFallbackFromIOUring(t *testing.T) {
	testutil.ChildDenied(t, deniedEngineEnv, func(syscall.Errno) { engineFallbackChild() })
	res := testutil.RunDenied(t, "TestEngineLogsAutoFallbackFromIOUring", deniedEngineEnv, unix.SYS_IO_URING_SETUP, unix.EPERM)
	for _, api := range []string{APIRequests, APIReadiness} {
		for _, kind := range []string{"listen", "dial"} {
			k := api + "-" + kind
			if res[k+"-backend"] != "epoll" {
				t.Errorf("%s: backend %q (%s), want epoll", k, res[k+"-backend"], res[k+"-err"])
			}
			if n := res[k+"-lines"]; n != "1" {
				t.Errorf("%s: WithLogf told of the fallback %s times, want once: %s", k, n, res[k+"-log"])
			}
			if l := res[k+"-log"]; !strings.Contains(l, "chose epoll") || !strings.Contains(l, syscall.EPERM.Error()) {
				t.Errorf("%s: WithLogf got %q, want the choice of epoll and %q", k, l, syscall.EPERM.Error())
			}
		}
	}
}

// engineFallbackChild is the child's side: engines on "auto" with io_uring_setup denied, and
// what each told WithLogf about its backend.
func engineFallbackChild() {
	for _, api := range []string{APIRequests, APIReadiness} {
		for _, kind := range []string{"listen", "dial"} {
			var mu sync.Mutex
			var lines []string
			logf := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				if l := fmt.Sprintf(format, args...); strings.Contains(l, "auto") {
					lines = append(lines, l)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			opts := []Option{WithLoops(2), WithAPI(api), WithLogf(logf)}
			var e *Engine
			var err error
			if kind == "listen" {
				e, err = Listen(ctx, "tcp", "127.0.0.1:0", Echo{}, opts...)
			} else {
				e, err = NewEngine(ctx, opts...)
			}
			k := api + "-" + kind
			if err != nil {
				fmt.Printf("DENIED %s-err=%v\n", k, err)
				cancel()
				continue
			}
			cancel()
			e.Wait()
			mu.Lock()
			fmt.Printf("DENIED %s-backend=%s\nDENIED %s-lines=%d\nDENIED %s-log=%s\n", k, e.Backend(), k, len(lines), k, strings.Join(lines, " | "))
			mu.Unlock()
		}
	}
}
