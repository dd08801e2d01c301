//go:build unix && !linux

package ringev

// rareDrv is the backend's part of a record's rare part (reqRare): none here.
type rareDrv struct{}
