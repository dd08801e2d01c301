//go:build linux

package ringev

// The layering of the package's files (docs/design.md, "Requests are built on the loop"): the
// request files (request*.go, backend_uring_req_*.go) use the loop's files freely; the loop's
// files use nothing declared in a request file. What the loop knows of requests is in its own
// files (reqseam.go), which the requests layer fills in.

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requestFile reports whether name (a file of the package, not a test) is one of the requests
// layer's.
func requestFile(name string) bool {
	return strings.HasPrefix(name, "request") || strings.HasPrefix(name, "backend_uring_req_")
}

// layerUse is a use, in a loop file, of something declared in a request file.
type layerUse struct {
	at   token.Position // where the loop file uses it
	key  string         // "user.go decl.go kind name", as loopUsesOfRequests lists them
	kind string
}

// loopUsesOfRequests type-checks the package's files that a linux/amd64 build compiles (no
// test file) and returns every use, in a loop file, of a package-level function, type,
// variable or constant, or a method or field, declared in a request file. Imports are not
// read: what comes from another package is left untyped, which hides none of the package's
// own names.
func loopUsesOfRequests(t *testing.T, dir string) []layerUse {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "linux", "amd64", false
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(dir, n); err != nil {
			t.Fatal(err)
		} else if !ok {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			p := types.NewPackage(path, filepath.Base(path))
			p.MarkComplete()
			return p, nil
		}),
		Error: func(error) {}, // the imports' names are unknown: their errors are expected
	}
	pkg, _ := conf.Check("github.com/ringev/ringev", fset, files, info)
	fields := map[*types.Var]string{} // a field's struct type
	for _, n := range pkg.Scope().Names() {
		if tn, ok := pkg.Scope().Lookup(n).(*types.TypeName); ok {
			if st, ok := tn.Type().Underlying().(*types.Struct); ok {
				for i := range st.NumFields() {
					fields[st.Field(i)] = n
				}
			}
		}
	}
	var uses []layerUse
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		at, decl := fset.Position(id.Pos()), fset.Position(obj.Pos())
		user, declFile := filepath.Base(at.Filename), filepath.Base(decl.Filename)
		if requestFile(user) || !requestFile(declFile) {
			continue
		}
		kind, name := "", obj.Name()
		switch o := obj.(type) {
		case *types.Func:
			kind = "func"
			if recv := o.Type().(*types.Signature).Recv(); recv != nil {
				kind, name = "method", typeName(recv.Type())+"."+name
			}
		case *types.Var:
			switch {
			case o.IsField():
				kind, name = "field", fields[o]+"."+name
			case o.Parent() == pkg.Scope():
				kind = "var"
			default:
				continue // a local of a function declared in a request file: none is used here
			}
		case *types.Const:
			kind = "const"
		case *types.TypeName:
			kind = "type"
		default:
			continue
		}
		uses = append(uses, layerUse{at: at, key: strings.Join([]string{user, declFile, kind, name}, " "), kind: kind})
	}
	slices.SortFunc(uses, func(a, b layerUse) int { return strings.Compare(a.at.String(), b.at.String()) })
	return uses
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// typeName names a method's receiver type.
func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return t.String()
}

// loopUsesAllowed are the uses of the request files that the loop's files may make, each as
// "user.go decl.go kind name": one, the Loop's embedding of reqSlots, the requests layer's own
// pointers, which the Loop holds for it and no loop code reads (a use of its fields is
// reported, as any other).
var loopUsesAllowed = map[string]bool{"loop.go request_rec.go type reqSlots": true}

// TestLayeringLoopFilesUseNoRequestCode fails when a loop file (any file of the package that is
// not a request file) calls a function or method declared in a request file, reads or writes a
// field of one, or names its types, variables or constants: the requests layer is built on the
// loop, and the loop reaches it only through what its own files declare (reqseam.go); the
// one use allowed is loopUsesAllowed's.
func TestLayeringLoopFilesUseNoRequestCode(t *testing.T) {
	seen := map[string]bool{}
	for _, u := range loopUsesOfRequests(t, ".") {
		seen[u.key] = true
		if !loopUsesAllowed[u.key] {
			t.Errorf("%s: a loop file uses the %s %s of a request file (%s)", u.at, u.kind, strings.Fields(u.key)[3], strings.Fields(u.key)[1])
		}
	}
	for k := range loopUsesAllowed {
		if !seen[k] {
			t.Errorf("loopUsesAllowed has %q, which is no longer used: take it off", k)
		}
	}
}

// TestLayeringCheckSeesACallIntoARequestFile makes sure the check above can fail: a loop file
// that calls a request file's function, reads a field of its type and names its constant is
// reported, three times, and a request file's use of the loop is not.
func TestLayeringCheckSeesACallIntoARequestFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("loop.go", "package ringev\n\ntype Loop struct{ n int }\n\nfunc (l *Loop) Once() int { return reqCount(l) + reqState{}.live + reqMax }\n")
	write("request_x.go", "package ringev\n\ntype reqState struct{ live int }\n\nconst reqMax = 3\n\nfunc reqCount(l *Loop) int { return l.n }\n")
	var got []string
	for _, u := range loopUsesOfRequests(t, dir) {
		got = append(got, u.key)
	}
	slices.Sort(got)
	want := []string{"loop.go request_x.go const reqMax", "loop.go request_x.go field reqState.live", "loop.go request_x.go func reqCount", "loop.go request_x.go type reqState"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("uses found: %q, want %q", got, want)
	}
}
