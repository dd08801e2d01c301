//go:build unix

package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ringev/ringev"
)

// mustCheckFlags exits 2 with checkFlags' error and the usage, as the flag package does with
// a value it cannot parse.
func mustCheckFlags(listen, upstream, backend string, loops int, dialTimeout time.Duration) {
	if err := checkFlags(listen, upstream, backend, loops, dialTimeout); err != nil {
		fmt.Fprintf(os.Stderr, "proxy: %v\n", err)
		flag.Usage()
		os.Exit(2)
	}
}

// checkFlags refuses a value of --listen, --upstream, --backend, --loops or --dial-timeout
// that would fail later (at the start, or at each client's dial: the host's name is looked up
// then), with an error that names the flag, as the flag package's errors do.
func checkFlags(listen, upstream, backend string, loops int, dialTimeout time.Duration) error {
	for _, f := range []struct{ name, addr string }{{"listen", listen}, {"upstream", upstream}} {
		_, port, err := net.SplitHostPort(f.addr)
		if err == nil {
			_, err = net.LookupPort("tcp", port)
		}
		if err != nil {
			return fmt.Errorf("invalid value %q for flag --%s: %v (want HOST:PORT)", f.addr, f.name, err)
		}
	}
	if backend != "auto" && !slices.Contains(ringev.Backends(), backend) {
		return fmt.Errorf("invalid value %q for flag --backend: known: auto, %s", backend, strings.Join(ringev.Backends(), ", "))
	}
	if loops < 0 {
		return fmt.Errorf("invalid value \"%d\" for flag --loops: must be >= 0 (0: one per CPU)", loops)
	}
	if dialTimeout < 0 {
		return fmt.Errorf("invalid value \"%v\" for flag --dial-timeout: must be >= 0 (0: no bound)", dialTimeout)
	}
	return nil
}
