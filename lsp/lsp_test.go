package lsp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// module is a small Go module: a type with a method, used from main,
// and a file with a type error.
var module = map[string]string{
	"go.mod": "module example.com/small\n\ngo 1.22\n",
	"shape/shape.go": `package shape

// Square is a square of side S.
type Square struct{ S int }

// Area is the square's area.
func (q Square) Area() int { return q.S * q.S }
`,
	"main.go": `package main

import "example.com/small/shape"

func main() {
	q := shape.Square{S: 2}
	println(q.Area(), "é😀", q.Area())
}
`,
	"bad/bad.go": "package bad\n\nvar X int = \"not an int\"\n",
}

// writeModule writes files under a new temporary directory.
func writeModule(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// gopls is the real gopls, which make deps installs; the tests need it.
func gopls(t testing.TB) []string {
	t.Helper()
	argv, ok := Defaults()["go"]
	if !ok {
		t.Fatal("gopls is not installed: make deps installs it")
	}
	return argv
}

// open syncs a file of dir with the client and returns its absolute path.
func open(t testing.TB, c *Client, dir, name string) (string, string) {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(p, string(b)); err != nil {
		t.Fatal(err)
	}
	return p, string(b)
}

// pos is the position of line and column (1-based, in characters) of text.
func pos(t testing.TB, text string, line, col int) Position {
	t.Helper()
	p, ok := Convert(text, line, col)
	if !ok {
		t.Fatalf("no line %d", line)
	}
	return p
}

func TestGoplsRequests(t *testing.T) {
	dir := writeModule(t, module)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := NewPool(HostStarter)
	defer pool.Close()
	c, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	mainGo, text := open(t, c, dir, "main.go")
	shapeGo := filepath.Join(dir, "shape", "shape.go")
	// Line 7, "\tprintln(q.Area(), "é😀", q.Area())": the second Area
	// comes after a character outside the BMP (two UTF-16 units).
	second := pos(t, text, 7, 29)
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"definition of a method across packages", func(t *testing.T) {
			locs, err := c.Definition(ctx, mainGo, second)
			if err != nil {
				t.Fatal(err)
			}
			if len(locs) != 1 || locs[0].Path != shapeGo || locs[0].Range.Start.Line != 6 {
				t.Fatalf("definition = %+v, want shape.go line 7", locs)
			}
		}},
		{"references include the declaration and both uses", func(t *testing.T) {
			locs, err := c.References(ctx, mainGo, second)
			if err != nil {
				t.Fatal(err)
			}
			var inMain, inShape int
			for _, l := range locs {
				switch l.Path {
				case mainGo:
					inMain++
				case shapeGo:
					inShape++
				}
			}
			if inMain != 2 || inShape != 1 {
				t.Fatalf("references = %+v, want 2 in main.go and 1 in shape.go", locs)
			}
		}},
		{"hover shows the signature and doc", func(t *testing.T) {
			h, err := c.Hover(ctx, mainGo, second)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(h, "Area() int") || !strings.Contains(h, "Area is the square's area.") {
				t.Fatalf("hover = %q", h)
			}
		}},
		{"symbols of a file, children under their parent", func(t *testing.T) {
			open(t, c, dir, "shape/shape.go")
			syms, err := c.Symbols(ctx, shapeGo)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range syms {
				names = append(names, strings.Repeat(" ", s.Depth)+s.Kind+" "+s.Name)
			}
			got := strings.Join(names, "|")
			t.Logf("symbols: %s", got)
			if !strings.Contains(got, "struct Square") || !strings.Contains(got, "method (Square).Area") {
				t.Fatalf("symbols = %s", got)
			}
		}},
		{"diagnostics of a file with a type error", func(t *testing.T) {
			bad, _ := open(t, c, dir, "bad/bad.go")
			diags, complete, err := c.Diagnostics(ctx, bad, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !complete || len(diags) == 0 || diags[0].SeverityName() != "error" || diags[0].Range.Start.Line != 2 {
				t.Fatalf("diagnostics = %+v (complete %v), want an error on line 3", diags, complete)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestPoolRestartsACrashedServer(t *testing.T) {
	dir := writeModule(t, module)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := NewPool(HostStarter)
	defer pool.Close()
	first, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	mainGo, text := open(t, first, dir, "main.go")
	first.Kill()
	// A request to the dead server fails with a clear error…
	if _, err := first.Definition(ctx, mainGo, pos(t, text, 6, 13)); !errors.Is(err, ErrServerExited) {
		t.Fatalf("request to a killed server: err = %v, want ErrServerExited", err)
	}
	// …and the next one gets a new server that answers.
	second, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("the pool handed out the dead server again")
	}
	open(t, second, dir, "main.go")
	locs, err := second.Definition(ctx, mainGo, pos(t, text, 6, 13))
	if err != nil || len(locs) != 1 {
		t.Fatalf("definition after restart = %+v, %v", locs, err)
	}
}

func TestPoolKeepsOneWarmServer(t *testing.T) {
	dir := writeModule(t, module)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := NewPool(HostStarter)
	defer pool.Close()
	a, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("a second request for the same workspace started a second server")
	}
}

func TestDefinitionInThisRepository(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Dir(filepath.Dir(file))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool := NewPool(HostStarter)
	defer pool.Close()
	c, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: repo})
	if err != nil {
		t.Fatal(err)
	}
	// pool.go calls Start (client.go) on its own line.
	path, text := open(t, c, repo, "lsp/pool.go")
	line, col := findText(t, text, "Start(sctx")
	locs, err := c.Definition(ctx, path, pos(t, text, line, col))
	if err != nil {
		t.Fatal(err)
	}
	if len(locs) != 1 || locs[0].Path != filepath.Join(repo, "lsp", "client.go") {
		t.Fatalf("definition of Start = %+v, want lsp/client.go", locs)
	}
}

// findText is the 1-based line and column of the first s in text.
func findText(t testing.TB, text, s string) (int, int) {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if j := strings.Index(l, s); j >= 0 {
			return i + 1, len([]rune(l[:j])) + 1
		}
	}
	t.Fatalf("%q not found", s)
	return 0, 0
}

// The server answers about the files as they are now: what an Edit or a
// command changed on disk since its last answer, opened files included,
// and files that did not exist when it started.
func TestServerSeesChangesOnDisk(t *testing.T) {
	dir := writeModule(t, module)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := NewPool(HostStarter)
	defer pool.Close()
	c, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shape := module["shape/shape.go"]
	steps := []struct {
		name     string
		change   func()
		mainText string // main.go as the request sends it
		col      int    // of the name asked about on main.go's line 7
		file     string
		line     int // 0-based line of the definition
	}{
		{"as it started", func() {}, module["main.go"], 29, "shape/shape.go", 6},
		{"a file nobody opened, edited on disk", func() { write("shape/shape.go", "// one\n// two\n"+shape) },
			module["main.go"], 29, "shape/shape.go", 8},
		{"an opened file, edited on disk", func() {
			open(t, c, dir, "shape/shape.go")
			write("shape/shape.go", "// one\n"+shape)
		}, module["main.go"], 29, "shape/shape.go", 7},
		{"a new file", func() { write("shape/extra.go", "package shape\n\n// Extra is new.\nfunc Extra() int { return 1 }\n") },
			strings.Replace(module["main.go"], "q.Area(), \"é😀\"", "shape.Extra(), \"é😀\"", 1), 17, "shape/extra.go", 3},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.change()
			mainGo := filepath.Join(dir, "main.go")
			if err := c.Sync(mainGo, st.mainText); err != nil {
				t.Fatal(err)
			}
			locs, err := c.Definition(ctx, mainGo, pos(t, st.mainText, 7, st.col))
			if err != nil {
				t.Fatal(err)
			}
			if len(locs) != 1 || locs[0].Path != filepath.Join(dir, st.file) || locs[0].Range.Start.Line != st.line {
				t.Fatalf("definition = %+v, want %s line %d", locs, st.file, st.line+1)
			}
		})
	}
}

// A server nobody asked for a while is shut down; the next request starts
// a new one.
func TestPoolShutsDownAnIdleServer(t *testing.T) {
	dir := writeModule(t, module)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := NewPool(HostStarter)
	pool.Idle = 300 * time.Millisecond
	defer pool.Close()
	spec := Spec{Argv: gopls(t), Workspace: dir}
	first, err := pool.Client(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for first.Alive() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if first.Alive() {
		t.Fatal("an idle server was kept")
	}
	second, err := pool.Client(ctx, spec)
	if err != nil || second == first || !second.Alive() {
		t.Fatalf("after the idle shutdown: %v, %v (same: %v)", second, err, second == first)
	}
}

// Loaded returns once gopls has loaded and diagnosed the whole workspace:
// by then it has published the type error of a file nobody opened.
func TestLoadedWaitsForTheWorkspaceDiagnosis(t *testing.T) {
	dir := writeModule(t, module)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := NewPool(HostStarter)
	defer pool.Close()
	c, err := pool.Client(ctx, Spec{Argv: gopls(t), Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Loaded(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	d := c.diags[fileURI(filepath.Join(dir, "bad", "bad.go"))]
	begun := c.work.begun
	c.mu.Unlock()
	if d == nil || len(d.items) == 0 {
		t.Fatalf("Loaded returned before bad/bad.go was diagnosed (%d works begun)", begun)
	}
	if begun < 2 {
		t.Fatalf("%d works begun, want the workspace's setup and its diagnosis", begun)
	}
}

// A server go install put in the home's go/bin is found when the system
// has none, and known as go-installed (the sandbox does not show it).
func TestDefaultsFindAGoInstalledServer(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GOPATH", "")
	t.Setenv("GOBIN", "")
	t.Setenv("PATH", t.TempDir())
	prog := filepath.Join(home, "go", "bin", "custos-test-server")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := findProgram("custos-test-server"); got != prog {
		t.Fatalf("findProgram = %q, want %q", got, prog)
	}
	if !GoInstalled(prog) {
		t.Fatalf("%s is not known as go-installed", prog)
	}
	if GoInstalled("/usr/local/bin/gopls") {
		t.Fatal("/usr/local/bin/gopls is known as go-installed")
	}
}
