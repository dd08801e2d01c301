//go:build linux

package bench

import (
	"fmt"
	"math/rand/v2"
)

// Rate processes for RioConfig.RateProcess (fio's rate_process).
const (
	// RateLinear issues I/O i at exactly i/rate seconds after the start.
	RateLinear = "linear"
	// RatePoisson issues I/Os with exponentially distributed gaps of mean
	// 1/rate seconds (a Poisson arrival process).
	RatePoisson = "poisson"
)

// rioSchedule is the rate limiter: the issue time of each I/O, in
// nanoseconds since the start of the run. Times are absolute, so an I/O that
// could not be issued on time (all iodepth slots busy, or a late wake-up) is
// issued as soon as possible and the long-run rate still holds.
type rioSchedule struct {
	rate    int64 // I/Os per second, > 0
	poisson bool
	rng     *rand.Rand // poisson only
	i       int64      // linear: index of the next I/O
	t       float64    // poisson: next time, ns
}

// newRioSchedule returns the schedule of rate I/Os per second (> 0) for
// process RateLinear or RatePoisson; seed fixes the Poisson draws.
func newRioSchedule(rate int, process string, seed uint64) (*rioSchedule, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("rate %d IOPS: must be > 0", rate)
	}
	s := &rioSchedule{rate: int64(rate)}
	switch process {
	case RateLinear:
	case RatePoisson:
		s.poisson = true
		s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	default:
		return nil, fmt.Errorf("unknown rate process %q (known: %s, %s)", process, RateLinear, RatePoisson)
	}
	return s, nil
}

// next returns the issue time (ns since the start) of the next I/O and
// advances. The first linear I/O is at 0; the first Poisson one after one
// random gap.
func (s *rioSchedule) next() int64 {
	if s.poisson {
		s.t += s.rng.ExpFloat64() * 1e9 / float64(s.rate)
		return int64(s.t)
	}
	// i * 1e9 / rate in integers: no drift however long the run.
	t := s.i * 1_000_000_000 / s.rate
	s.i++
	return t
}
