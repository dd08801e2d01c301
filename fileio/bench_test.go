//go:build linux

package fileio_test

// Benchmarks of 4 KiB random reads from the page cache by 16 goroutines (GOMAXPROCS x 8):
// os.File against fileio in each mode, with the page cache tried first and with every read
// through the ring. Run with -benchmem: fileio allocates nothing per read. cpu-ns/op is the
// process's user+system time per read (getrusage), which moves less than ns/op on a shared
// machine.

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringev/ringev/fileio"
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchBlocks is the size of the benchmarks' file in 4 KiB blocks (64 MiB).
const benchBlocks = 64 << 20 / 4096

// benchFile writes the benchmarks' file in b's temporary directory; the page cache keeps it.
func benchFile(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bench.dat")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range benchBlocks * 4096 / len(buf) {
		buf[0] = byte(i)
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	return p
}

// benchReads runs 4 KiB random reads of r from 8 goroutines per P.
func benchReads(b *testing.B, r io.ReaderAt) {
	b.SetParallelism(8)
	b.ReportAllocs()
	c0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 4096)
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for pb.Next() {
			if _, err := r.ReadAt(buf, int64(rng.IntN(benchBlocks))*4096); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkFileReadAt(b *testing.B) {
	b.Run("os", func(b *testing.B) {
		f, err := os.Open(benchFile(b))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		benchReads(b, f)
	})
	for _, first := range []bool{true, false} {
		for _, m := range ringModes {
			name := string(m)
			if first {
				name = "page-cache-first/" + name
			} else {
				name = "ring/" + name
			}
			b.Run(name, func(b *testing.B) {
				requireMode(b, m)
				r, err := fileio.NewRing(fileio.WithMode(m), fileio.WithPageCacheFirst(first))
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				f, err := r.Open(benchFile(b), os.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				benchReads(b, f)
				b.ReportMetric(float64(r.Stats().RingOps)/float64(b.N), "ring-ops/op")
			})
		}
	}
}

// BenchmarkRingPipeReadAfterIdle reads one byte of a pipe that another goroutine writes 200 µs
// after the read starts, one read at a time: the owner sleeps with the read in the kernel, and
// again after it, so each read wakes it. enters/op is the owner's io_uring_enter(2) calls (and
// ModeDeputy's ppoll waits) per read, with the regime's idle gaps.
func BenchmarkRingPipeReadAfterIdle(b *testing.B) {
	for _, m := range []fileio.Mode{fileio.ModePlain, fileio.ModeDeferTaskrun, fileio.ModeSQPoll, fileio.ModeDeputy, fileio.ModeNetpoll} {
		b.Run(string(m), func(b *testing.B) {
			requireMode(b, m)
			r, err := fileio.NewRing(fileio.WithMode(m))
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			pr, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			defer pw.Close()
			f, err := r.Adopt(pr)
			if err != nil {
				b.Fatal(err)
			}
			buf, one := make([]byte, 1), []byte{1}
			s0 := r.Stats()
			b.ResetTimer()
			for range b.N {
				t := time.AfterFunc(200*time.Microsecond, func() { pw.Write(one) })
				if _, err := f.ReadAt(buf, 0); err != nil {
					b.Fatal(err)
				}
				t.Stop()
			}
			b.StopTimer()
			b.ReportMetric(float64(r.Stats().Enters-s0.Enters)/float64(b.N), "enters/op")
		})
	}
}
