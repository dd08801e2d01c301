//go:build linux

package bench

import (
	"testing"

	"github.com/ringev/ringev"
)

// BenchmarkFdBusy runs the shapes compared with the C proactor (fd_speed1, fd_busy16, fd_busy256) in the
// completion modes and the readiness modes default and syscall, on every backend, and fd_busy on
// the Go netpoller, through RunPipes: ns/op is ns per read event after the run's untimed
// warm-up. allocs/event counts the heap objects allocated during the timed part (every
// goroutine's, the runtime's included) per event: 0 when a request allocates nothing in steady
// state; b.ReportAllocs's allocs/op also counts the set-up (loop, pipes), spread over b.N.
// Compare runs with benchstat.
func BenchmarkFdBusy(b *testing.B) {
	shapes := []string{ShapeFdSpeed1, FdBusyShape(16), FdBusyShape(256)}
	modes := append(completionModes(), PipesModeDefault, PipesModeSyscall)
	for _, shape := range shapes {
		for _, backend := range ringev.Backends() {
			for _, mode := range modes {
				b.Run(shape+"/"+Label(backend, mode), func(b *testing.B) {
					requireBackend(b, backend)
					benchRun(b, backend, shape, mode)
				})
			}
		}
		if shape != ShapeFdSpeed1 { // BenchmarkPipes has the netpoller's fd_speed1
			b.Run(shape+"/"+Netpoller, func(b *testing.B) { benchRun(b, Netpoller, shape, PipesModeDefault) })
		}
	}
}

// benchRun measures one run of b.N events and reports ns/op, events/s and allocs/event.
func benchRun(b *testing.B, backend, shape, mode string) {
	b.ReportAllocs()
	lastRunAllocs = 0
	r, err := RunPipes(backend, shape, Options{Events: int64(max(b.N, 20)), Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.NsPerEvent, "ns/op")
	b.ReportMetric(r.EventsPerSec, "events/s")
	if backend != Netpoller && (shape != ShapeFdSpeed1 || isCompletionMode(mode)) {
		b.ReportMetric(float64(lastRunAllocs)/float64(r.Events), "allocs/event")
	}
}
