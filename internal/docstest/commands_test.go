package docstest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// command is one shell command of a page: a line of a sh fence (comments
// cut, continuations joined) or a code span of the prose that starts with
// a command custos documents (starter, go run ./starter, make, go test).
type command struct {
	where string // page:line
	text  string
	words []string
}

// words splits a command line as the shell would, keeping quoted words and
// $(…) whole; it cuts a comment.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in := false
	var quote byte
	depth := 0
	flush := func() {
		if in {
			out = append(out, cur.String())
		}
		cur.Reset()
		in = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '(' && i > 0 && line[i-1] == '$':
			depth++
			cur.WriteByte(c)
		case c == ')' && depth > 0:
			depth--
			cur.WriteByte(c)
		case (c == ' ' || c == '\t') && depth == 0:
			flush()
		case c == '#' && depth == 0 && !in:
			flush()
			return out
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return out
}

// shellCommands are the page's commands: every line of its sh fences, and
// the code spans that start a custos command.
func (p page) shellCommands() []command {
	fences, _ := p.fences()
	var out []command
	for _, f := range fences {
		if f.lang != "sh" && f.lang != "bash" && f.lang != "shell" {
			continue
		}
		for i := 0; i < len(f.lines); i++ {
			line, n := f.lines[i], f.line+1+i
			for strings.HasSuffix(strings.TrimSpace(line), "\\") && i+1 < len(f.lines) {
				i++
				line = strings.TrimSuffix(strings.TrimSpace(line), "\\") + " " + strings.TrimSpace(f.lines[i])
			}
			if w := words(line); len(w) > 0 {
				out = append(out, command{where: p.path + ":" + strconv.Itoa(n), text: strings.TrimSpace(line), words: w})
			}
		}
	}
	for _, s := range p.inlineCode() {
		w := words(s.text)
		if len(w) < 2 { // a bare `starter` or `make` names the program, not a command
			continue
		}
		if w[0] == "starter" || w[0] == "make" || (len(w) > 2 && w[0] == "go" && (w[1] == "test" || (w[1] == "run" && w[2] == "./starter"))) {
			out = append(out, command{where: p.path + ":" + strconv.Itoa(s.line), text: s.text, words: w})
		}
	}
	return out
}

// makeTargets are the Makefile's targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// goFlags are the flags a main package defines with the flag package
// (flag.String("name", …) and the like), read from its source.
func goFlags(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "flag" {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				name, _ := strconv.Unquote(lit.Value)
				out[name] = true
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatalf("no flags found in %s: is the pattern still right?", dir)
	}
	return out
}

// testFuncs are the Test, Benchmark, Example and Fuzz functions of the
// package in dir.
func testFuncs(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	var out []string
	re := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example|Fuzz)\w*)\(`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// checkGoTest: the packages exist and each -run and -bench pattern names a
// test or benchmark in them ('^$', no test at all, is what it says).
func checkGoTest(t *testing.T, c command, args []string) {
	t.Helper()
	var pkgs []string
	patterns := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-run" || a == "-bench":
			if i+1 < len(args) {
				patterns[a] = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, strings.TrimSuffix(strings.TrimPrefix(a, "./"), "/"))
		}
	}
	if len(pkgs) == 0 {
		t.Errorf("%s: %q: no package named", c.where, c.text)
		return
	}
	var funcs []string
	for _, p := range pkgs {
		if p == "..." {
			return
		}
		if st, err := os.Stat(filepath.Join(root, p)); err != nil || !st.IsDir() {
			t.Errorf("%s: %q: no package ./%s", c.where, c.text, p)
			return
		}
		funcs = append(funcs, testFuncs(t, p)...)
	}
	for flag, pat := range patterns {
		if pat == "^$" {
			continue
		}
		top := strings.Split(pat, "/")[0]
		re, err := regexp.Compile(top)
		if err != nil {
			t.Errorf("%s: %q: %s %q does not compile: %v", c.where, c.text, flag, pat, err)
			continue
		}
		prefix := "Test"
		if flag == "-bench" {
			prefix = "Benchmark"
		}
		found := false
		for _, f := range funcs {
			if strings.HasPrefix(f, prefix) && re.MatchString(f) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %q: %s %q matches no %s function in %v", c.where, c.text, flag, pat, prefix, pkgs)
		}
	}
}

// docFlags are the flags a command line names: words that start with '-',
// with placeholders' brackets and alternatives (--for 30m|--until T) read
// as the shell would not, but a person does.
func docFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if a == "--" {
			break
		}
		for _, alt := range strings.Split(a, "|") {
			alt = strings.Trim(alt, "[]")
			if strings.HasPrefix(alt, "-") && len(alt) > 1 && alt != "--" {
				name, _, _ := strings.Cut(strings.TrimLeft(alt, "-"), "=")
				out = append(out, name)
			}
		}
	}
	return out
}
