//go:build linux

package bench

import (
	"testing"
	"time"
)

// BenchmarkPipes runs every shape of `ringev bench pipes` (fd_many with 1, 100 and 10,000 pipes)
// on every backend and the Go netpoller, through RunPipes: ns/op is the harness's ns per read
// event, measured after its untimed warm-up. A context run lasts 200 ms, whatever b.N. Compare
// runs with benchstat.
func BenchmarkPipes(b *testing.B) {
	var shapes []string
	for _, s := range Shapes() {
		if s == ShapeFdBusy {
			continue // BenchmarkFdBusy
		}
		if s == ShapeFdMany {
			shapes = append(shapes, FdManyShape(1), FdManyShape(100), FdManyShape(10000))
			continue
		}
		shapes = append(shapes, s)
	}
	for _, shape := range shapes {
		for _, backend := range Backends() {
			if backend == Netpoller && shape == ShapeContext {
				continue // a ping-pong has no signals or timer
			}
			if backend == "poll" && shape == FdManyShape(10000) {
				continue // poll(2) scans every fd per wait: ~0.4 ms per event
			}
			b.Run(backend+"/"+shape, func(b *testing.B) {
				if backend != Netpoller {
					requireBackend(b, backend)
				}
				r, err := RunPipes(backend, shape, Options{Events: int64(max(b.N, 20)), ContextDuration: 200 * time.Millisecond})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.NsPerEvent, "ns/op")
				b.ReportMetric(r.EventsPerSec, "events/s")
			})
		}
	}
}
