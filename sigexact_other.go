//go:build unix && (!linux || !amd64)

package ringev

import (
	"errors"
	"syscall"
)

var (
	sigexactCounts  [65]uint64
	sigexactPending uint32
	sigexactWakeFd  int64 = -1
)

type kernelSigaction struct{}

var errSigexactArch = errors.New("ringev: WithExactSignals needs a signal handler written for this architecture (only amd64 has one)")

func sigexactInstall(syscall.Signal) (kernelSigaction, error) {
	return kernelSigaction{}, errSigexactArch
}
func sigexactRestore(syscall.Signal, kernelSigaction) error { return nil }

const sigexactSupported = false
