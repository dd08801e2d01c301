//go:build linux && race

package server

// raceEnabled: the race detector is on (it slows crypto/tls several times: tests size down).
const raceEnabled = true
