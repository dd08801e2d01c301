//go:build linux

package fileio_test

// Tests of the owner's sleep and wake-up: a caller that finds the owner asleep writes the
// eventfd, once per sleep; no interleaving of callers and owner may leave an operation queued
// while the owner sleeps.

import (
	"os"
	"testing"

	"github.com/ringev/ringev/fileio"
)

// TestWakeupForTakenWorkLeavesOwnerWakeable gives the sleeping owner a wake-up for an
// operation it has already served (a caller pushes, the owner takes and completes the
// operation and sleeps again, and only then does the caller look at the flag and write the
// eventfd), then reads through the ring: the read must complete. An owner that goes back to
// sleep on that wake-up without announcing its sleep again is never woken by the read.
func TestWakeupForTakenWorkLeavesOwnerWakeable(t *testing.T) {
	path := tempFile(t, pattern(1<<16))
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		if r.Mode() == fileio.ModeThreads {
			t.Skip("ModeThreads has no owner to wake")
		}
		f := openFile(t, r, path, os.O_RDONLY)
		buf := make([]byte, 4096)
		for i := range 8 {
			waitFor(t, "the owner asleep", func() bool { return fileio.OwnerAsleep(r) })
			fileio.WakeOwner(r)
			before := r.Stats().RingOps
			res := await(t, "a read after a wake-up for taken work", async(func() (int, error) {
				return f.ReadAt(buf, int64(i)*4096)
			}))
			if res.err != nil || res.n != len(buf) {
				t.Fatalf("ReadAt at %d: %d, %v", i*4096, res.n, res.err)
			}
			if r.Stats().RingOps == before {
				t.Fatalf("ReadAt at %d did not go through the ring", i*4096)
			}
		}
	}, fileio.WithPageCacheFirst(false))
}
