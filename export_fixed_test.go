//go:build linux

package ringev

// ForgeFixedBuffer makes a FixedBuffer of l over b with index, registered or not: a test's
// way to give the kernel memory that is not the registered buffer's.
func ForgeFixedBuffer(l *Loop, b []byte, index int) FixedBuffer {
	return FixedBuffer{l: l, b: b, index: uint16(index)}
}
