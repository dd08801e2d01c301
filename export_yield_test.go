package ringev

// Yields returns how many times l's blocking waits yielded to the Go scheduler first
// (yieldBeforeBlock).
func Yields(l *Loop) uint64 { return l.yields }
