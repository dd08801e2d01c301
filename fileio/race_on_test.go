//go:build linux && race

package fileio_test

// raceEnabled: the race detector's instrumentation allocates on its own.
const raceEnabled = true
