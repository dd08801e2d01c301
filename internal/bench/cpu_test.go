//go:build linux

package bench

import "testing"

// TestRunPipesReportsLoopThreadCPU: a ringev run reports the loop thread's CPU time per event
// (> 0, and at most the wall-clock time per event plus 10 %: a thread cannot run longer than
// the run, the margin is for the two clocks' reads); the netpoller, whose goroutines run on two
// threads, none.
func TestRunPipesReportsLoopThreadCPU(t *testing.T) {
	for _, b := range []string{"epoll", "uring", Netpoller} {
		t.Run(b, func(t *testing.T) {
			requireBackend(t, b)
			r, err := RunPipes(b, ShapeFdSpeed1, Options{Events: 5000})
			if err != nil {
				t.Fatal(err)
			}
			if b == Netpoller {
				if r.CPUNsPerEvent != 0 {
					t.Errorf("netpoller: cpu_ns_per_event %v, want none", r.CPUNsPerEvent)
				}
				return
			}
			if r.CPUNsPerEvent <= 0 || r.CPUNsPerEvent > r.NsPerEvent*1.1 {
				t.Errorf("cpu %v ns per event, wall %v ns per event; want 0 < cpu <= wall", r.CPUNsPerEvent, r.NsPerEvent)
			}
		})
	}
}
