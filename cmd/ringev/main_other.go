//go:build !linux

package main

import (
	"fmt"
	"os"
	"runtime"
)

// main says that ringev's tools need Linux: every backend they measure (io_uring, epoll, and
// poll with its ppoll(2) and eventfd wake-up) is Linux's.
func main() {
	fmt.Fprintf(os.Stderr, "ringev: its tools measure Linux's io_uring, epoll and ppoll(2): not supported on %s\n", runtime.GOOS)
	os.Exit(1)
}
