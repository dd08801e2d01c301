//go:build linux

package uring

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// goDoc returns the package's documentation as go doc shows it: only comments attached to a
// declaration are in it; a comment standing alone between declarations is not.
func goDoc(t *testing.T) *doc.Package {
	t.Helper()
	bp, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/ringev/ringev/uring")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// docOf is the doc comment of the named type, or of its method when method is not "".
func docOf(t *testing.T, p *doc.Package, typ, method string) string {
	t.Helper()
	for _, ty := range p.Types {
		if ty.Name != typ {
			continue
		}
		if method == "" {
			return ty.Doc
		}
		for _, m := range ty.Methods {
			if m.Name == method {
				return m.Doc
			}
		}
	}
	t.Fatalf("no %s %s in the package's documentation", typ, method)
	return ""
}

// TestDocDeputyExplainsDeputySubmission: go doc of Deputy says what deputy submission does
// and when to use GetCompanionSQE, not only its name.
func TestDocDeputyExplainsDeputySubmission(t *testing.T) {
	d := docOf(t, goDoc(t), "Deputy", "")
	for _, want := range []string{"NEED_WAKEUP", "companion ring", "GetCompanionSQE", "link chain", "DeputyTag"} {
		if !strings.Contains(d, want) {
			t.Errorf("go doc uring.Deputy does not mention %q:\n%s", want, d)
		}
	}
}

// TestDocSetUserDataSaysPrepResetsIt: go doc of SQE.SetUserData says that a Prep method resets
// the user data, so that it is set after the Prep call (liburing's prep helpers leave it).
func TestDocSetUserDataSaysPrepResetsIt(t *testing.T) {
	p := goDoc(t)
	for _, m := range []string{"SetUserData", "SetFlags"} {
		if d := docOf(t, p, "SQE", m); !strings.Contains(d, "Prep") {
			t.Errorf("go doc uring.SQE.%s does not say that a Prep method resets it:\n%s", m, d)
		}
	}
	if d := docOf(t, p, "SQE", ""); !strings.Contains(d, "resets the whole SQE") {
		t.Errorf("go doc uring.SQE does not say that every Prep method resets the whole SQE:\n%s", d)
	}
}
