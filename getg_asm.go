//go:build amd64 || arm64

package ringev

// getg returns the calling goroutine's runtime g pointer (getg_amd64.s, getg_arm64.s).
func getg() uintptr
