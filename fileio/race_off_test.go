//go:build linux && !race

package fileio_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
