package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is how long a product function may be before its comment
// must say why it is long.
const maxFuncLines = 80

// longReason is the phrase such a comment carries.
const longReason = "It is long because"

// Every product function (tests, end-to-end tests and test helpers aside)
// fits on a screen, or its doc comment says why it must not: a reader
// follows a call top-down, and a long function hides the steps it takes.
func TestLongFunctionsSayWhy(t *testing.T) {
	root := filepath.Join("..", "..")
	var long []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "e2e", "testdata", "testenv", "slacktest", "archtest", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found, err := longFunctions(path)
		long = append(long, found...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		t.Errorf("%s: over %d lines; split it, or say in its doc comment %q and why", f, maxFuncLines, longReason+" …")
	}
}

// longFunctions lists the functions in one file that are longer than
// maxFuncLines without a doc comment that says why.
func longFunctions(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		if end.Line-start.Line+1 <= maxFuncLines {
			continue
		}
		if fd.Doc != nil && strings.Contains(strings.Join(strings.Fields(fd.Doc.Text()), " "), longReason) {
			continue
		}
		out = append(out, start.String()+" "+fd.Name.Name)
	}
	return out, nil
}

// The check finds a long function without the reason, and passes one with it.
func TestLongFunctionsCheckFindsThem(t *testing.T) {
	body := strings.Repeat("\t_ = 1\n", maxFuncLines)
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		src := "package p\n\n" + doc + "func f() {\n" + body + "}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := longFunctions(write("bare.go", "// f does things.\n")); err != nil || len(got) != 1 {
		t.Errorf("a long function without a reason: found %q (%v), want it", got, err)
	}
	if got, err := longFunctions(write("why.go", "// f does things. It is long because\n// it is one table.\n")); err != nil || len(got) != 0 {
		t.Errorf("a long function that says why: found %q (%v), want nothing", got, err)
	}
}
