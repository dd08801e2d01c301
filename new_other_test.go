//go:build unix && !linux

package ringev_test

// New off Linux: the package builds, and New fails with an error that names the platform.

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/ringev/ringev"
)

// TestNewOffLinuxIsUnsupported: New, by default and with each backend named, returns no loop
// and an error that wraps errors.ErrUnsupported and names runtime.GOOS.
func TestNewOffLinuxIsUnsupported(t *testing.T) {
	for _, name := range append([]string{"auto"}, ringev.Backends()...) {
		l, err := ringev.New(ringev.WithBackend(name))
		if l != nil || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), runtime.GOOS) {
			t.Errorf("New(WithBackend(%q)) = %v, %v; want nil and an error naming %s that wraps errors.ErrUnsupported", name, l, err, runtime.GOOS)
		}
	}
}
