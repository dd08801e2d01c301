package ringev_test

import (
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestCoreDoesNotImportUring: the ring has one owner (issue 12, item 5): the loop's core files
// (the dispatch in once.go, the Loop in loop.go, the handler I/O methods in io.go, the ride
// decision in ride.go) see the backend only through its interfaces, never package uring's SQEs
// and CQEs.
func TestCoreDoesNotImportUring(t *testing.T) {
	for _, name := range []string{"once.go", "loop.go", "io.go", "ride.go", "backend.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "github.com/ringev/ringev/uring" {
				t.Errorf("%s imports %s: only the uring backend's files may", name, path)
			}
		}
	}
}
