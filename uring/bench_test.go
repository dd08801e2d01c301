//go:build linux

package uring

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkNop measures NOP submit+reap, the binding's own cost, in the shape
// of ../shared/anchors/uring_nop.c: prepare batch NOPs, SubmitAndWait(batch),
// consume the CQEs, repeat. One b.N is one NOP; ns/op is per NOP and ops/s is
// comparable with the anchor's output.
func BenchmarkNop(b *testing.B) {
	for _, mode := range []struct {
		name  string
		flags uint32
	}{
		{"defer", SetupSingleIssuer | SetupDeferTaskrun},
		{"nodefer", 0},
	} {
		for _, batch := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("batch=%d/%s", batch, mode.name), func(b *testing.B) {
				benchNop(b, batch, mode.flags)
			})
		}
	}
}

func benchNop(b *testing.B, batch int, flags uint32) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(WithEntries(256), WithFlags(flags))
	if err != nil {
		b.Skipf("setup flags %v: %v", SetupFlagNames(flags), err)
	}
	defer r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(batch, b.N-done)
		for i := 0; i < k; i++ {
			r.GetSQE().PrepNop()
		}
		if _, err := r.SubmitAndWait(uint32(k)); err != nil {
			b.Fatal(err)
		}
		n := r.CQReady()
		r.CQAdvance(n)
		done += int(n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
