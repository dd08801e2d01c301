//go:build linux

package ringev_test

// Adversarial tests of the hot path rewritten in 3c40e1a/e959feb (once.go, internal/rawsys):
// the readiness buffer read in place, cacheLeft, pickFd's fairness scan and error rule, the
// inline slot and fd-event storage, the busy look without the sleeping announcement.

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ringev/ringev"
	"github.com/ringev/ringev/internal/testutil"
)

// TestReadNonblockingIntoMovingStacks: many goroutines read and write pipes with
// ReadNonblocking/WriteNonblocking into stack buffers at varying stack depths (so stacks grow
// and move between calls) while the GC runs; every byte read is the byte written.
func TestReadNonblockingIntoMovingStacks(t *testing.T) {
	var wg sync.WaitGroup
	stopGC := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopGC:
				return
			default:
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	defer close(stopGC)
	for g := range 8 {
		r, w := testutil.Pipe(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				atDepth(t, (i*7+g)%200, r, w, byte(i+g))
				if t.Failed() {
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("readers did not finish within a minute")
	}
}

// atDepth recurses depth frames (each with stack data) and then writes and reads back 64
// bytes of pattern b through the raw calls, from stack buffers.
func atDepth(t *testing.T, depth, r, w int, b byte) byte {
	var pad [128]byte
	pad[depth%128] = b
	if depth > 0 {
		return atDepth(t, depth-1, r, w, b) + pad[depth%128] - b
	}
	var out, in [64]byte
	for i := range out {
		out[i] = b + byte(i)
	}
	if n, err := ringev.WriteNonblocking(w, out[:]); n != len(out) || err != nil {
		t.Errorf("WriteNonblocking: %d, %v", n, err)
		return 0
	}
	runtime.Gosched()
	if n, err := ringev.ReadNonblocking(r, in[:]); n != len(in) || err != nil {
		t.Errorf("ReadNonblocking: %d, %v", n, err)
		return 0
	}
	if in != out {
		t.Errorf("read %v, wrote %v", in[:8], out[:8])
	}
	return b
}
