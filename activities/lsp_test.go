package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/lsp"
	"github.com/custos-dev/custos/sandbox"
)

// lspModule is a small Go module with a package a deny rule hides
// (secret/), which uses the visible one and is used by main.
var lspModule = map[string]string{
	"go.mod": "module example.com/small\n\ngo 1.22\n",
	"shape/shape.go": `package shape

// Square is a square of side S.
type Square struct{ S int }

// Area is the square's area.
func (q Square) Area() int { return q.S * q.S }
`,
	"main.go": `package main

import (
	"fmt"

	"example.com/small/secret"
	"example.com/small/shape"
)

func main() {
	q := shape.Square{S: 2}
	fmt.Println(q.Area(), secret.Key)
}
`,
	"secret/secret.go": `package secret

import "example.com/small/shape"

// Key is hidden by a deny rule.
const Key = "hunter2"

var _ = shape.Square{}
`,
	"bad/bad.go": "package bad\n\nvar X int = \"not an int\"\n",
	"notes.txt":  "no server knows text files\n",
}

// lspCase is one LSP call and what its answer holds. onHost holds only
// when the server runs on the host: there it sees the denied package, and
// the activity's filter alone keeps it out of the answer; in the sandbox
// the deny rules' masks hide it from the server too.
type lspCase struct {
	name     string
	input    string
	isErr    bool
	contains []string
	onHost   []string
	excludes []string
}

var lspCases = []lspCase{
	{name: "definition across packages", input: `{"operation":"definition","file_path":"main.go","line":11,"column":13}`,
		contains: []string{"shape/shape.go:4:6: type Square struct{ S int }\n"}, excludes: []string{"withheld"}},
	{name: "references, the denied file's withheld", input: `{"operation":"references","file_path":"shape/shape.go","line":4,"column":6}`,
		contains: []string{"shape/shape.go:4:6: ", "shape/shape.go:7:9: ", "main.go:11:13: q := shape.Square{S: 2}\n"},
		onHost:   []string{"[1 result(s) withheld"}, excludes: []string{"secret/"}},
	{name: "definition in a denied file is withheld", input: `{"operation":"definition","file_path":"main.go","line":12,"column":31}`,
		contains: []string{"no definition found at main.go:12:31"}, onHost: []string{"[1 result(s) withheld"}, excludes: []string{"secret/", "hunter2"}},
	{name: "definition outside the workspace is withheld", input: `{"operation":"definition","file_path":"main.go","line":12,"column":6}`,
		contains: []string{"no definition found", "[1 result(s) withheld"}, excludes: []string{"print.go"}},
	{name: "hover", input: `{"operation":"hover","file_path":"main.go","line":12,"column":16}`,
		contains: []string{"Area() int", "Area is the square's area."}},
	{name: "hover of a symbol defined in a denied file is withheld", input: `{"operation":"hover","file_path":"main.go","line":12,"column":31}`,
		onHost: []string{"withheld"}, excludes: []string{"hunter2", "hidden by a deny rule"}},
	{name: "symbols of a file", input: `{"operation":"symbols","file_path":"shape/shape.go"}`,
		contains: []string{"struct Square struct{...}  shape/shape.go:4:6\n", "  field S int  shape/shape.go:4:21\n", "method (Square).Area func() int  shape/shape.go:7:17\n"}},
	{name: "symbols enclosing a line", input: `{"operation":"symbols","file_path":"shape/shape.go","line":7}`,
		contains: []string{"(Square).Area"}, excludes: []string{"struct Square"}},
	{name: "diagnostics of a type error", input: `{"operation":"diagnostics","file_path":"bad/bad.go"}`,
		contains: []string{"bad/bad.go:3:13: error: "}},
	{name: "diagnostics of a clean file", input: `{"operation":"diagnostics","file_path":"shape/shape.go"}`,
		contains: []string{"no problems found in shape/shape.go"}},
	{name: "a denied file is refused", input: `{"operation":"symbols","file_path":"secret/secret.go"}`,
		isErr: true, contains: []string{"denied by a deny rule"}, excludes: []string{"Key"}},
	{name: "outside the workspace is refused", input: `{"operation":"symbols","file_path":"../x.go"}`, isErr: true},
	{name: "a position operation without its position", input: `{"operation":"definition","file_path":"main.go"}`,
		isErr: true, contains: []string{"needs line and column"}},
	{name: "an unknown operation", input: `{"operation":"rename","file_path":"main.go","line":1,"column":1}`,
		isErr: true, contains: []string{`unknown operation "rename"`}},
	{name: "a line past the end", input: `{"operation":"hover","file_path":"main.go","line":99,"column":1}`,
		contains: []string{"main.go has no line 99"}},
	{name: "a file no server knows", input: `{"operation":"symbols","file_path":"notes.txt"}`,
		isErr: true, contains: []string{"no language server knows .txt files"}},
	{name: "not JSON", input: `{"operation":`, isErr: true, contains: []string{"LSP: "}},
}

func TestLSP(t *testing.T) {
	if _, ok := lsp.Defaults()["go"]; !ok {
		t.Fatal("gopls is not installed: make deps installs it")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mkfiles(t, ws, lspModule)
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { sandbox.WaitIdle(sb) })
	for _, run := range []struct {
		name   string
		start  lsp.Starter
		onHost bool
	}{
		// As on a worker: the workspace read-only, the masks over it, no network.
		{"in the sandbox", SandboxStarter(sb), false},
		{"on the host", lsp.HostStarter, true},
	} {
		t.Run(run.name, func(t *testing.T) {
			pool := lsp.NewPool(run.start)
			defer pool.Close()
			tools := &Tools{Sandbox: sb, LSPServers: pool}
			for _, tt := range lspCases {
				t.Run(tt.name, func(t *testing.T) { tt.check(t, tools, ws, run.onHost) })
			}
		})
	}
}

// check makes the call with the deny rule Read(secret/**) and checks the answer.
func (tt lspCase) check(t *testing.T, tools *Tools, ws string, onHost bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := tools.LSP(ctx, api.ToolRequest{Workspace: ws, Input: json.RawMessage(tt.input), ReadDeny: []string{"secret/**"}})
	require.NoError(t, err)
	require.Equal(t, tt.isErr, res.IsError, res.Output)
	want := tt.contains
	if onHost {
		want = append(slices.Clone(want), tt.onHost...)
	}
	for _, s := range want {
		require.Contains(t, res.Output, s)
	}
	for _, s := range tt.excludes {
		require.NotContains(t, res.Output, s)
	}
}

// A worker without language servers answers so, as a result.
func TestLSPWithoutServers(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.go"), []byte("package a\n"), 0o644))
	res, err := (&Tools{}).LSP(context.Background(), api.ToolRequest{Workspace: ws, Input: json.RawMessage(`{"operation":"symbols","file_path":"a.go"}`)})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Output, "runs no language servers")
}

// A server the sandbox cannot see is refused with what to do, before
// bubblewrap is asked to run a program that is not there.
func TestLanguageServerMustBeVisibleInTheSandbox(t *testing.T) {
	ws := t.TempDir()
	tests := []struct {
		prog string
		ok   bool
	}{
		{"/usr/local/bin/gopls", true},
		{"gopls", true}, // looked up on the sandbox's PATH
		{filepath.Join(ws, "tools", "server"), true},
		{"/root/go/bin/gopls", false},
		{"/usr/../root/go/bin/gopls", false},
	}
	for _, tt := range tests {
		t.Run(tt.prog, func(t *testing.T) {
			err := visibleInSandbox(tt.prog, ws)
			require.Equal(t, tt.ok, err == nil, "%v", err)
			if err != nil {
				require.Contains(t, err.Error(), "make deps")
			}
		})
	}
}

// A gopls go install put in the home's go/bin (where lsp.Defaults finds
// it when the system has none) is refused where the tool fails, saying
// it is on the host but not in the sandbox, and what to do.
func TestLSPSaysAGoInstalledServerIsNotInTheSandbox(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	prog := filepath.Join(home, "go", "bin", "gopls")
	require.NoError(t, os.MkdirAll(filepath.Dir(prog), 0o755))
	if err := os.Link(lsp.Defaults()["go"][0], prog); err != nil {
		require.NoError(t, os.Symlink(lsp.Defaults()["go"][0], prog))
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mkfiles(t, ws, lspModule)
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { sandbox.WaitIdle(sb) })
	pool := lsp.NewPool(SandboxStarter(sb))
	defer pool.Close()
	res, err := (&Tools{Sandbox: sb, LSPServers: pool}).LSP(context.Background(), api.ToolRequest{Workspace: ws,
		LSP:   map[string][]string{"go": {prog}},
		Input: json.RawMessage(`{"operation":"definition","file_path":"main.go","line":11,"column":13}`)})
	require.NoError(t, err)
	require.True(t, res.IsError)
	for _, want := range []string{prog + " is on the host but not visible in the sandbox", "where go install put it", "GOBIN=/usr/local/bin go install"} {
		require.Contains(t, res.Output, want)
	}
}

// A sandboxed server that dies is started again by the next call, which
// answers as if nothing had happened.
func TestLSPRestartsACrashedServer(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mkfiles(t, ws, lspModule)
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { sandbox.WaitIdle(sb) })
	pool := lsp.NewPool(SandboxStarter(sb))
	defer pool.Close()
	tools := &Tools{Sandbox: sb, LSPServers: pool}
	req := api.ToolRequest{Workspace: ws, Input: json.RawMessage(`{"operation":"definition","file_path":"main.go","line":11,"column":13}`)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, err := tools.LSP(ctx, req)
	require.NoError(t, err)
	require.Contains(t, first.Output, "shape/shape.go:4:6:")
	c, err := pool.Client(ctx, lsp.Spec{Argv: lsp.Defaults()["go"], Workspace: ws})
	require.NoError(t, err)
	c.Kill()
	require.Eventually(t, func() bool { return !c.Alive() }, 10*time.Second, 10*time.Millisecond)
	again, err := tools.LSP(ctx, req)
	require.NoError(t, err)
	require.Equal(t, first.Output, again.Output)
}

// What the Edit tool changes, the sandboxed server answers about at once.
func TestLSPSeesAnEdit(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mkfiles(t, ws, lspModule)
	sb, err := sandbox.New(sandbox.Config{FailIfUnavailable: true, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { sandbox.WaitIdle(sb) })
	pool := lsp.NewPool(SandboxStarter(sb))
	defer pool.Close()
	tools := &Tools{Sandbox: sb, LSPServers: pool}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	def := api.ToolRequest{Workspace: ws, Input: json.RawMessage(`{"operation":"definition","file_path":"main.go","line":11,"column":13}`)}
	res, err := tools.LSP(ctx, def)
	require.NoError(t, err)
	require.Contains(t, res.Output, "shape/shape.go:4:6:")
	edit, err := tools.Edit(ctx, api.ToolRequest{Workspace: ws, Input: json.RawMessage(
		`{"file_path":"shape/shape.go","old_string":"// Square is","new_string":"// Added.\n\n// Square is"}`)})
	require.NoError(t, err)
	require.False(t, edit.IsError, edit.Output)
	res, err = tools.LSP(ctx, def)
	require.NoError(t, err)
	require.Contains(t, res.Output, "shape/shape.go:6:6: type Square struct{ S int }")
}

// An attack on the compiled deny rules the file tools keep: the job's
// rules change between two calls (a Read deny rule learned or added),
// and the second call must hide what the new rule names, the file asked
// about as well as a result's, as if nothing were kept.
func TestLSPDenyRuleAddedBetweenCallsHides(t *testing.T) {
	if _, ok := lsp.Defaults()["go"]; !ok {
		t.Fatal("gopls is not installed: make deps installs it")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mkfiles(t, ws, lspModule)
	pool := lsp.NewPool(lsp.HostStarter)
	defer pool.Close()
	tools := &Tools{LSPServers: pool}
	call := func(tool func(context.Context, api.ToolRequest) (api.ToolResult, error), input string, deny ...string) api.ToolResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := tool(ctx, api.ToolRequest{Workspace: ws, Input: json.RawMessage(input), ReadDeny: deny})
		require.NoError(t, err)
		return res
	}
	def := `{"operation":"definition","file_path":"main.go","line":11,"column":13}`
	res := call(tools.LSP, def, "secret/**")
	require.False(t, res.IsError, res.Output)
	require.Contains(t, res.Output, "shape/shape.go:4:6: type Square struct{ S int }")

	res = call(tools.LSP, def, "secret/**", "shape/**")
	require.False(t, res.IsError, res.Output)
	require.NotContains(t, res.Output, "shape.go")
	require.Contains(t, res.Output, "[1 result(s) withheld")

	res = call(tools.LSP, def, "secret/**", "main.go")
	require.True(t, res.IsError, res.Output)
	require.Contains(t, res.Output, "main.go is denied by a deny rule (Read)")

	// Read keeps the same compiled rules.
	read := `{"file_path":"shape/shape.go"}`
	require.False(t, call(tools.Read, read, "secret/**").IsError)
	res = call(tools.Read, read, "secret/**", "shape/**")
	require.True(t, res.IsError, res.Output)
	require.NotContains(t, res.Output, "Square")
}
