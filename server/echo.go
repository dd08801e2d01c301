//go:build unix

package server

// Echo is the echo protocol: every byte received is sent back, in order. It keeps no state.
type Echo struct{}

// Serve consumes as much of in as fits below OutputLimit and appends it to out; it never asks for
// the connection to be closed (the driver closes it when the client does).
func (Echo) Serve(in, out []byte) (int, []byte, bool) {
	n := min(len(in), max(0, OutputLimit-len(out)))
	return n, append(out, in[:n]...), false
}
