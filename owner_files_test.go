//go:build linux

package ringev_test

// The ring's one owner: only the uring backend's root files import package uring.

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCoreDoesNotImportUring: the ring has one owner, the uring backend. A root non-test file
// that imports package uring has "uring" in its name (the uring backend's files, and
// SubmitSQE's, whose signature takes a *uring.SQE); the core (the dispatch in once.go, the
// Loop, the requests' API, records, dispatch and emulation, ...) sees the backend only
// through its interfaces, never an SQE or a CQE.
func TestCoreDoesNotImportUring(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/ringev/ringev/uring" && !strings.Contains(name, "uring") {
				t.Errorf("%s imports %s: only a file with \"uring\" in its name may", name, path)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d root files: the glob did not find the package's sources", checked)
	}
}
