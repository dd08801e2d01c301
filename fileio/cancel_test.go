//go:build linux

package fileio_test

// Tests of cancellation by context: an operation the owner has not taken is dropped, one it
// holds back is failed, one in the kernel is cancelled there (IORING_OP_ASYNC_CANCEL); each
// returns the context's error once the kernel has let go of its buffer.

import (
	"context"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
)

// uringModes are the modes that cancel in the kernel.
var uringModes = []fileio.Mode{fileio.ModePlain, fileio.ModeDeferTaskrun, fileio.ModeSQPoll, fileio.ModeDeputy,
	fileio.ModeNetpoll}

// forUringModes is forModes without ModeThreads.
func forUringModes(t *testing.T, test func(t *testing.T, r *fileio.Ring), opts ...fileio.Option) {
	for _, m := range uringModes {
		t.Run(string(m), func(t *testing.T) {
			requireMode(t, m)
			test(t, newRing(t, append([]fileio.Option{fileio.WithMode(m)}, opts...)...))
		})
	}
}

// checkCancelled fails unless err is a cancelled call's error.
func checkCancelled(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, context.Canceled) || !errors.Is(err, unix.ECANCELED) {
		t.Fatalf("cancelled read: err %v, want one wrapping context.Canceled and ECANCELED", err)
	}
}

func TestFileCancelBeforeTheOwnerTakesIt(t *testing.T) {
	forUringModes(t, func(t *testing.T, r *fileio.Ring) {
		f, w := pipeFile(t, r)
		resume := fileio.PauseOwner(r)
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() (int, error) { return f.ReadAtContext(ctx, make([]byte, 10), 0) })
		cancel()
		res := await(t, "ReadAtContext cancelled while the owner is held", done)
		checkCancelled(t, res.err)
		resume()
		// The read never reached the kernel: the pipe's bytes are all still there.
		if _, err := w.Write([]byte("still here")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		n, err := f.ReadAt(buf, 0)
		if err != nil || string(buf[:n]) != "still here" {
			t.Fatalf("next read = %q, %v; want the 10 bytes written", buf[:n], err)
		}
		if st := r.Stats(); st.RingOps != 1 || st.Cancels != 0 {
			t.Errorf("Stats %+v: want 1 ring op (the second read) and no cancel", st)
		}
	})
}

func TestFileCancelWhileTheOwnerHoldsItBack(t *testing.T) {
	// One SQ entry, a CQ of 4: two reads fill what the owner lets into the kernel, and the
	// third waits in the owner.
	forUringModes(t, func(t *testing.T, r *fileio.Ring) {
		f, w := pipeFile(t, r)
		var held [2]<-chan result
		for i := range held {
			held[i] = async(func() (int, error) { return f.ReadAt(make([]byte, 1), 0) })
		}
		waitFor(t, "two reads in the kernel", func() bool { return r.Stats().RingOps == 2 })
		ctx, cancel := context.WithCancel(context.Background())
		third := async(func() (int, error) { return f.ReadAtContext(ctx, make([]byte, 1), 0) })
		cancel()
		checkCancelled(t, await(t, "the held-back read", third).err)
		if st := r.Stats(); st.RingOps != 2 || st.Cancels != 0 {
			t.Errorf("Stats %+v: want 2 ring ops and no cancel (the third never reached the kernel)", st)
		}
		w.Write([]byte("ab"))
		for i := range held {
			if res := await(t, "a read in the kernel", held[i]); res.err != nil || res.n != 1 {
				t.Errorf("read %d = %d, %v", i, res.n, res.err)
			}
		}
	}, fileio.WithEntries(1))
}

func TestFileCancelInTheKernel(t *testing.T) {
	forUringModes(t, func(t *testing.T, r *fileio.Ring) {
		f, w := pipeFile(t, r)
		ctx, cancel := context.WithCancel(context.Background())
		done := async(func() (int, error) { return f.ReadAtContext(ctx, make([]byte, 10), 0) })
		waitFor(t, "the read in the kernel", func() bool { return r.Stats().RingOps == 1 })
		cancel()
		checkCancelled(t, await(t, "ReadAtContext cancelled in the kernel", done).err)
		if st := r.Stats(); st.Cancels != 1 {
			t.Errorf("Stats %+v: want 1 IORING_OP_ASYNC_CANCEL", st)
		}
		// The kernel dropped the read: bytes written now go to the next one.
		w.Write([]byte("0123456789"))
		buf := make([]byte, 10)
		if n, err := f.ReadAt(buf, 0); err != nil || string(buf[:n]) != "0123456789" {
			t.Fatalf("next read = %q, %v", buf[:n], err)
		}
	})
}

func TestFileCancelAfterTheResultKeepsTheResult(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, pattern(100)), 0)
		ctx, cancel := context.WithCancel(context.Background())
		n, err := f.ReadAtContext(ctx, make([]byte, 200), 0)
		cancel()
		if n != 100 || err != io.EOF {
			t.Fatalf("ReadAtContext = %d, %v; want 100, io.EOF", n, err)
		}
	})
}

func TestFileCancelledContextStartsNothing(t *testing.T) {
	forModes(t, func(t *testing.T, r *fileio.Ring) {
		f := openFile(t, r, tempFile(t, pattern(100)), 0)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := f.ReadAtContext(ctx, make([]byte, 10), 0)
		checkCancelled(t, err)
		if st := r.Stats(); st.RingOps != 0 {
			t.Errorf("Stats %+v: an operation started with a cancelled context", st)
		}
	})
}

// TestFileCancelMoreThanTheCQHolds cancels, in one turn of the owner, more reads in the kernel
// than the CQ has room for with their cancels' own completions (each cancelled read posts two
// CQEs: its -ECANCELED and the IORING_OP_ASYNC_CANCEL's). The CQEs beyond the CQ wait in the
// kernel's overflow list (IORING_SQ_CQ_OVERFLOW); every read must still return.
func TestFileCancelMoreThanTheCQHolds(t *testing.T) {
	const reads = 48 // WithEntries(16): a CQ of 64, of which the owner lets 48 operations in
	forUringModes(t, func(t *testing.T, r *fileio.Ring) {
		f, _ := pipeFile(t, r)
		ctx, cancel := context.WithCancel(context.Background())
		done := make([]<-chan result, reads)
		for i := range done {
			done[i] = async(func() (int, error) { return f.ReadAtContext(ctx, make([]byte, 1), 0) })
		}
		waitFor(t, "the reads in the kernel", func() bool { return r.Stats().RingOps == reads })
		resume := fileio.PauseOwner(r)
		cancel()
		waitFor(t, "every cancel queued", func() bool { return fileio.QueuedCancels(r) == reads })
		resume()
		for i := range done {
			checkCancelled(t, await(t, "a cancelled read", done[i]).err)
		}
	}, fileio.WithEntries(16))
}
