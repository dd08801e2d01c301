//go:build linux

package ringev

// Tests of the decision of ride.go: rideDecider and calibratedPath, driven with given costs
// (ns of CPU time per fd handler run, as the loop measures them), never with a clock.

import (
	"math"
	"math/rand/v2"
	"testing"
)

// rideSim runs d for n windows, each costing cost(i, path) on the path d chose for it, and
// returns the paths the windows ran on.
func rideSim(d *rideDecider, n int, cost func(i int, p ioPath) float64) []ioPath {
	p := d.cur
	paths := make([]ioPath, n)
	for i := range n {
		paths[i] = p
		p = d.next(p, cost(i, p))
	}
	return paths
}

// fixedCosts is a cost function with one cost per path.
func fixedCosts(ring, syscall float64) func(int, ioPath) float64 {
	return func(_ int, p ioPath) float64 {
		if p == pathRing {
			return ring
		}
		return syscall
	}
}

// countPath counts the windows of paths that ran on p.
func countPath(paths []ioPath, p ioPath) int {
	n := 0
	for _, q := range paths {
		if q == p {
			n++
		}
	}
	return n
}

// rideSettle is the most windows a decider needs to leave a path that is dearer by more than
// rideMargin when it probes at once: rideConfirm probes of 2*rideProbeLen windows, each
// followed by one window of its path.
const rideSettle = rideConfirm * (2*rideProbeLen + 1)

// TestRideDeciderCheapSyscallsTakeTheSyscallPath: where read(2)/write(2) cost less than the ring
// (this project's machine: ~1650 against ~1990 ns per fd handler run), a decider that starts on
// the ring (a calibration that guessed wrong) takes the syscall path within rideSettle windows,
// switches once, and afterwards runs less than 2 % of its windows on the ring (the probes).
func TestRideDeciderCheapSyscallsTakeTheSyscallPath(t *testing.T) {
	d := newRideDecider(pathRing)
	paths := rideSim(&d, 20000, fixedCosts(1990, 1650))
	if d.cur != pathSyscall || d.switches != 1 {
		t.Fatalf("after 20000 windows: path %v, %d switches; want syscall, 1", d.cur, d.switches)
	}
	if n := countPath(paths[rideSettle:], pathRing); n > len(paths)/50 {
		t.Errorf("%d of %d windows after the first %d ran on the ring, want at most 2 %%", n, len(paths)-rideSettle, rideSettle)
	}
	if paths[rideSettle] != pathSyscall {
		t.Errorf("window %d ran on %v, want the syscall path by then", rideSettle, paths[rideSettle])
	}
}

// TestRideDeciderExpensiveSyscallsTakeTheRingPath: where syscalls are dear (PTI, slowsys 3000:
// ~3900 ns per fd handler run with read(2)/write(2), ~3400 through the ring), a decider that
// starts on the syscall path takes the ring within rideSettle windows and stays there.
func TestRideDeciderExpensiveSyscallsTakeTheRingPath(t *testing.T) {
	d := newRideDecider(pathSyscall)
	paths := rideSim(&d, 20000, fixedCosts(3400, 3900))
	if d.cur != pathRing || d.switches != 1 {
		t.Fatalf("after 20000 windows: path %v, %d switches; want ring, 1", d.cur, d.switches)
	}
	if paths[rideSettle] != pathRing {
		t.Errorf("window %d ran on %v, want the ring by then", rideSettle, paths[rideSettle])
	}
	if n := countPath(paths[rideSettle:], pathSyscall); n > len(paths)/50 {
		t.Errorf("%d of %d windows after the first %d ran on the syscall path, want at most 2 %%", n, len(paths)-rideSettle, rideSettle)
	}
}

// TestRideDeciderProbesLessOftenWhileThePathHolds: while the path keeps being the cheaper one,
// the gap between probes doubles up to rideMaxGap: in the last 10,000 of 20,000 windows the
// other path runs only the probes' windows, rideProbeLen per rideMaxGap+2*rideProbeLen.
func TestRideDeciderProbesLessOftenWhileThePathHolds(t *testing.T) {
	d := newRideDecider(pathSyscall)
	paths := rideSim(&d, 20000, fixedCosts(2000, 1600))
	if d.switches != 0 {
		t.Fatalf("%d switches, want none", d.switches)
	}
	probes := 10000/(rideMaxGap+2*rideProbeLen) + 1
	if n := countPath(paths[10000:], pathRing); n > probes*rideProbeLen {
		t.Errorf("%d of the last 10000 windows ran on the ring, want at most %d (%d probes)", n, probes*rideProbeLen, probes)
	}
	if d.gap != rideMaxGap {
		t.Errorf("gap between probes %d windows, want %d", d.gap, rideMaxGap)
	}
}

// TestRideDeciderFollowsAPhaseChange: the machine changes phase twice (syscalls cheap, then dear,
// then cheap again, as when a co-tenant or a kernel setting changes): the decider takes the ring
// within rideMaxGap+rideSettle windows of the first change, and the syscall path again within
// as many windows of the second, switching exactly twice.
func TestRideDeciderFollowsAPhaseChange(t *testing.T) {
	const change1, change2 = 5000, 10000
	dear := func(i int) bool { return i >= change1 && i < change2 }
	d := newRideDecider(pathSyscall)
	paths := rideSim(&d, 15000, func(i int, p ioPath) float64 {
		switch {
		case p == pathRing && dear(i):
			return 3400
		case p == pathRing:
			return 1990
		case dear(i):
			return 3900
		}
		return 1650
	})
	if d.switches != 2 {
		t.Fatalf("%d switches, want 2", d.switches)
	}
	const within = rideMaxGap + rideSettle
	if countPath(paths[:change1], pathRing) > change1/50 {
		t.Errorf("before the first change %d windows ran on the ring", countPath(paths[:change1], pathRing))
	}
	if p := paths[change1+within]; p != pathRing {
		t.Errorf("window %d (%d after syscalls became dear) ran on %v, want the ring", change1+within, within, p)
	}
	if p := paths[change2+within]; p != pathSyscall {
		t.Errorf("window %d (%d after syscalls became cheap again) ran on %v, want the syscall path", change2+within, within, p)
	}
}

// TestRideDeciderNoFlappingOnNoise: hysteresis. Two paths whose windows cost the same within
// ±1.4 % (a median of one path can then be at most 2.8 % below the other's, less than
// rideMargin), or whose true costs differ by 1.5 % with ±0.7 % noise, never make the decider
// switch, in 100,000 windows, from either path.
func TestRideDeciderNoFlappingOnNoise(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ring, syscall float64
		noise         float64 // each window's cost is multiplied by 1 ± up to noise
	}{
		{"Equal", 2000, 2000, 0.014},
		{"RingCheaperWithinMargin", 1970, 2000, 0.007},
		{"SyscallCheaperWithinMargin", 2000, 1970, 0.007},
	} {
		for _, start := range []ioPath{pathSyscall, pathRing} {
			t.Run(tc.name+"/From"+start.String(), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, 2))
				d := newRideDecider(start)
				rideSim(&d, 100000, func(_ int, p ioPath) float64 {
					c := tc.syscall
					if p == pathRing {
						c = tc.ring
					}
					return c * (1 + tc.noise*(2*rng.Float64()-1))
				})
				if d.switches != 0 || d.cur != start {
					t.Fatalf("%d switches, ended on %v; want none, on %v", d.switches, d.cur, start)
				}
			})
		}
	}
}

// TestRideDeciderOneDisturbedWindowDoesNotSwitch: in every probe one window of the current path
// costs twice as much and one of the other path half as much (an interrupt, a co-tenant's burst),
// the rest the same: the medians do not move, so the decider never switches.
func TestRideDeciderOneDisturbedWindowDoesNotSwitch(t *testing.T) {
	d := newRideDecider(pathSyscall)
	inProbe := 0
	rideSim(&d, 50000, func(_ int, p ioPath) float64 {
		if d.probe == 0 {
			inProbe = 0
			return 2000
		}
		inProbe++
		switch {
		case inProbe == 1 && p == pathRing: // the probe's first window runs on the other path
			return 1000
		case inProbe == 2 && p == pathSyscall:
			return 4000
		}
		return 2000
	})
	if d.switches != 0 || d.probes == 0 {
		t.Fatalf("%d switches in %d probes, want none (and some probes)", d.switches, d.probes)
	}
}

// TestRideDeciderOneMisleadingProbeDoesNotSwitch: the other path looks 25 % cheaper during one
// whole probe (a burst that favoured it) and dearer afterwards: one probe is not enough
// (rideConfirm), the confirming probe that follows at once finds it dearer, and the decider
// keeps its path.
func TestRideDeciderOneMisleadingProbeDoesNotSwitch(t *testing.T) {
	d := newRideDecider(pathSyscall)
	rideSim(&d, 5000, func(_ int, p ioPath) float64 {
		switch {
		case p == pathSyscall:
			return 2000
		case d.probes == 0: // the first probe is under way
			return 1500
		}
		return 2100
	})
	if d.switches != 0 || d.probes < 2 {
		t.Fatalf("%d switches after %d probes, want none (after at least 2)", d.switches, d.probes)
	}
}

// TestRideDeciderHeavyNoiseStillSettles: with ±10 % noise on every window and the ring 20 %
// dearer, the ring can look at most ~2 % cheaper in a window pair, so the decider leaves it once
// (it started there) and never comes back; at least 97 % of the windows after rideSettle run on
// the syscall path.
func TestRideDeciderHeavyNoiseStillSettles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := newRideDecider(pathRing)
	paths := rideSim(&d, 50000, func(_ int, p ioPath) float64 {
		c := 1650.0
		if p == pathRing {
			c = 1980
		}
		return c * (1 + 0.1*(2*rng.Float64()-1))
	})
	if d.switches != 1 || d.cur != pathSyscall {
		t.Fatalf("%d switches, ended on %v; want 1, syscall", d.switches, d.cur)
	}
	if n := countPath(paths[rideSettle:], pathSyscall); n < (len(paths)-rideSettle)*97/100 {
		t.Errorf("%d of %d windows on the syscall path, want at least 97 %%", n, len(paths)-rideSettle)
	}
}

// TestRideDeciderIgnoresCostsThatAreNotPositive: a window whose cost is 0, negative, NaN or
// infinite (a clock that did not move, or went wrong) is not counted: the other path's such
// windows never make it look cheaper, and a probe without valid samples decides nothing.
func TestRideDeciderIgnoresCostsThatAreNotPositive(t *testing.T) {
	for _, bad := range []float64{0, -5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		d := newRideDecider(pathSyscall)
		rideSim(&d, 5000, func(_ int, p ioPath) float64 {
			if p == pathRing {
				return bad
			}
			return 2000
		})
		if d.switches != 0 || d.probes != 0 {
			t.Errorf("ring windows costing %v: %d switches, %d probes concluded; want none", bad, d.switches, d.probes)
		}
	}
}

// TestRideCalibratedPath: the start calibration's choice: the ring when it was more than
// rideCalBias cheaper per read and look; read(2)/write(2) for a near tie (cheap syscalls: the
// ring then costs more in the loop than in the calibration), when the ring is dearer, and when
// either was not measured.
func TestRideCalibratedPath(t *testing.T) {
	for _, tc := range []struct {
		sys, ring float64
		want      ioPath
	}{
		{1332, 1496, pathSyscall}, // ~170 ns syscalls, measured
		{1341, 1333, pathSyscall}, // a near tie
		{2900, 2070, pathRing},    // slowsys 3000, measured
		{1000, 899, pathRing},
		{1000, 901, pathSyscall},
		{0, 500, pathSyscall},
		{500, 0, pathSyscall},
	} {
		if got := calibratedPath(tc.sys, tc.ring); got != tc.want {
			t.Errorf("calibratedPath(sys %v, ring %v) = %v, want %v", tc.sys, tc.ring, got, tc.want)
		}
	}
}

// TestRideMedian: the median of one to rideProbeLen costs, in any order.
func TestRideMedian(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{5}, 5},
		{[]float64{9, 1}, 5},
		{[]float64{3, 100, 1}, 3},
	} {
		if got := median(tc.v); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
