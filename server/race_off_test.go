//go:build linux && !race

package server

// raceEnabled: see race_on_test.go.
const raceEnabled = false
