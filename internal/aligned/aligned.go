// Package aligned allocates page-aligned memory on the Go heap, for O_DIRECT and registered
// (fixed) buffers: package fileio's AlignedBuffer and ringev's Loop.RegisterBuffers.
package aligned

import "unsafe"

// Page is the alignment of Bytes, in bytes: a page, which satisfies every device's O_DIRECT
// rule (usually 512 bytes, at most the page size).
const Page = 4096

// Bytes returns n zeroed bytes whose first byte is aligned to Page. The garbage collector never
// moves heap memory, so the alignment holds for the slice's life. It panics if n < 0, as make
// does.
func Bytes(n int) []byte {
	b := make([]byte, n+Page)
	skip := (Page - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%Page)) % Page
	return b[skip : skip+n : skip+n]
}
