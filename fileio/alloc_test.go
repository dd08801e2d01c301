//go:build linux

package fileio_test

// Tests that an operation allocates nothing in steady state: the record comes from a pool, the
// caller parks on its channel, the owner's tables are reused.

import (
	"context"
	"os"
	"testing"

	"github.com/ringev/ringev/fileio"
)

func TestFileOperationsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates for its own bookkeeping; run without -race")
	}
	for _, first := range []bool{false, true} {
		t.Run(map[bool]string{false: "ring", true: "page-cache-first"}[first], func(t *testing.T) {
			forModes(t, func(t *testing.T, r *fileio.Ring) {
				f := openFile(t, r, tempFile(t, pattern(1<<16)), os.O_RDWR)
				buf := make([]byte, 4096)
				bufs := [][]byte{buf[:100], buf[100:]}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				for _, c := range []struct {
					name string
					op   func()
				}{
					{"ReadAt", func() { f.ReadAt(buf, 4096) }},
					{"ReadAtContext", func() { f.ReadAtContext(ctx, buf, 4096) }},
					{"WriteAt", func() { f.WriteAt(buf, 8192) }},
					{"ReadvAt", func() { f.ReadvAt(bufs, 0) }},
				} {
					if a := testing.AllocsPerRun(200, c.op); a != 0 {
						t.Errorf("%s: %.2f allocations per call, want 0", c.name, a)
					}
				}
			}, fileio.WithPageCacheFirst(first))
		})
	}
}
