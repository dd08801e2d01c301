//go:build linux

package ringev

import "github.com/ringev/ringev/uring"

// rareDrv is the uring backend's part of a record's rare part (reqRare).
type rareDrv struct {
	ts  uring.Timespec // the LINK_TIMEOUT's (the kernel reads it at submission)
	sqe uring.SQE      // SubmitSQE's SQE, and PostTo's MSG_RING
}
