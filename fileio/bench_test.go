package fileio

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchFile is a file of 64 MiB in the test's temporary directory, read once so that the page
// cache holds it.
func benchFile(b *testing.B) string {
	b.Helper()
	p := b.TempDir() + "/bench.dat"
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range 64 {
		buf[0] = byte(i)
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	return p
}

const benchBlocks = 64 << 20 / 4096

func BenchmarkReadAtOS(b *testing.B) {
	f, err := os.Open(benchFile(b))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetParallelism(8)
	b.ReportAllocs()
	c0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 4096)
		rng := rand.New(rand.NewPCG(1, 2))
		for pb.Next() {
			if _, err := f.ReadAt(buf, int64(rng.IntN(benchBlocks))*4096); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchRing(b *testing.B, opts ...Option) {
	r, err := NewRing(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	f, err := r.Open(benchFile(b), os.O_RDONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(8)
	b.ReportAllocs()
	c0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 4096)
		rng := rand.New(rand.NewPCG(1, 2))
		for pb.Next() {
			if _, err := f.ReadAt(buf, int64(rng.IntN(benchBlocks))*4096); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(r.Stats().RingOps)/float64(b.N), "ringops/op")
}

func BenchmarkReadAtPageCacheFirst(b *testing.B) { benchRing(b) }

func BenchmarkReadAtRingPlain(b *testing.B) {
	benchRing(b, WithMode(ModePlain), WithPageCacheFirst(false))
}
func BenchmarkReadAtRingDefer(b *testing.B) {
	benchRing(b, WithMode(ModeDeferTaskrun), WithPageCacheFirst(false))
}
func BenchmarkReadAtRingSQPoll(b *testing.B) {
	benchRing(b, WithMode(ModeSQPoll), WithPageCacheFirst(false))
}
func BenchmarkReadAtRingDeputy(b *testing.B) {
	benchRing(b, WithMode(ModeDeputy), WithPageCacheFirst(false))
}
func BenchmarkReadAtThreads(b *testing.B) {
	benchRing(b, WithMode(ModeThreads), WithPageCacheFirst(false))
}

func BenchmarkReadAtPageCacheFirstThreads(b *testing.B) { benchRing(b, WithMode(ModeThreads)) }
