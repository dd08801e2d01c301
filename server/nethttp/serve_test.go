//go:build linux

package nethttp

import "testing"

// TestEarlyErrorReadsNoEmptyHead: an empty head (the 4 stray CRLFs net/http skips after a
// POST, and nothing after them) has no error and is not read: no reader taken, nothing
// allocated, no panic recovered.
func TestEarlyErrorReadsNoEmptyHead(t *testing.T) {
	var err error
	allocs := testing.AllocsPerRun(100, func() { err = earlyError(nil) })
	if err != nil || allocs != 0 {
		t.Fatalf("earlyError of an empty head: %v, %v allocations; want nil and none", err, allocs)
	}
}
