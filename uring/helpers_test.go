//go:build linux

package uring

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireProbe returns r's probe, skipping the test where the kernel has none
// (IORING_REGISTER_PROBE, Linux 5.6).
func requireProbe(t *testing.T, r *Ring) *Probe {
	t.Helper()
	p, err := r.Probe()
	if err != nil {
		t.Skipf("IORING_REGISTER_PROBE (5.6) unavailable: %v", err)
	}
	return p
}

// requireOp skips the test, naming the op and its release, when the kernel's
// probe says it does not support op.
func requireOp(t *testing.T, r *Ring, op uint8) {
	t.Helper()
	if err := requireProbe(t, r).RequireOp(op); err != nil {
		t.Skip(err)
	}
}

// requireFeature skips the test when the ring lacks feature bit f.
func requireFeature(t *testing.T, r *Ring, f uint32) {
	t.Helper()
	if r.Features()&f == 0 {
		t.Skipf("IORING_FEAT_%v missing", FeatureNames(f))
	}
}

// drain copies and consumes every CQE ready now.
func drain(r *Ring) []CQE {
	var out []CQE
	for cqe, ok := r.PopCQE(); ok; cqe, ok = r.PopCQE() {
		out = append(out, cqe)
	}
	return out
}

// collect submits and waits (bounded by waitTimeout overall) until n CQEs
// have been reaped, and returns them in arrival order. It fails the test if
// they do not all arrive.
func collect(t *testing.T, r *Ring, n int) []CQE {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var out []CQE
	for len(out) < n {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("got %d of %d CQEs before the deadline: %+v", len(out), n, out)
		}
		if _, err := r.SubmitAndWaitTimeout(1, left); err != nil && !errors.Is(err, unix.ETIME) {
			t.Fatalf("SubmitAndWaitTimeout: %v", err)
		}
		out = append(out, drain(r)...)
	}
	if len(out) > n {
		t.Fatalf("got %d CQEs, want %d: %+v", len(out), n, out)
	}
	return out
}

// byUserData indexes CQEs by user_data (the last one wins).
func byUserData(cqes []CQE) map[uint64]CQE {
	m := make(map[uint64]CQE, len(cqes))
	for _, c := range cqes {
		m[c.UserData] = c
	}
	return m
}

// expectNoCQE fails if a CQE arrives within d.
func expectNoCQE(t *testing.T, r *Ring, d time.Duration) {
	t.Helper()
	if _, err := r.SubmitAndWaitTimeout(1, d); !errors.Is(err, unix.ETIME) {
		t.Fatalf("wait: err %v, want ETIME; CQEs %+v", err, drain(r))
	}
}

// prep gets an SQE, lets f prepare it and sets its user data.
func prep(t *testing.T, r *Ring, ud uint64, f func(*SQE)) *SQE {
	t.Helper()
	sqe := getSQE(t, r)
	f(sqe)
	sqe.SetUserData(ud)
	return sqe
}

func errnoRes(e unix.Errno) int32 { return -int32(e) }
