//go:build unix

// Package kernel reads the running kernel's release (uname(2)), for what no probe tells: a
// kernel behaviour that changed without a flag or an opcode to ask for, and the release a
// report or a skip names.
package kernel

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Release returns uname(2)'s release ("6.1.0-57-cloud-amd64"), or "" where uname fails.
func Release() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// AtLeast reports whether the running kernel's release is at least major.minor; an unreadable
// release counts as older.
func AtLeast(major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(Release(), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
