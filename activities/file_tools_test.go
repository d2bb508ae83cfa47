package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
)

// escapeFixture adds the classic ways out of a workspace.
func escapeFixture(t *testing.T, ws string) (outside string) {
	t.Helper()
	outside = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOP SECRET\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "out")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "secretlink")))
	return outside
}

func TestRead(t *testing.T) {
	ws := t.TempDir()
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "L%d\n", i)
	}
	mkfiles(t, ws, map[string]string{
		"a.txt":         "alpha\nbeta\ngamma",
		"empty.txt":     "",
		"many.txt":      many.String(),
		"long.txt":      strings.Repeat("x", 5000) + "\nshort\n",
		"bin.dat":       "ELF\x00\x01\x02",
		"dir/nested.go": "package dir\n",
		".git/config":   "[core]\n",
	})
	escapeFixture(t, ws)
	tools := &Tools{}
	tests := []struct {
		name     string
		input    string
		isErr    bool
		contains []string
		excludes []string
	}{
		{name: "whole file", input: `{"file_path":"a.txt"}`,
			contains: []string{"     1\talpha\n", "     2\tbeta\n", "     3\tgamma\n"}, excludes: []string{"showing lines"}},
		{name: "absolute inside", input: jsonArgs(t, map[string]string{"file_path": filepath.Join(ws, "a.txt")}),
			contains: []string{"     1\talpha"}},
		{name: "offset and limit", input: `{"file_path":"many.txt","offset":10,"limit":2}`,
			contains: []string{"    10\tL10\n", "    11\tL11\n", "[showing lines 10-11 of 2500; continue with offset=12]"},
			excludes: []string{"L9\n", "L12\n"}},
		{name: "default limit 2000", input: `{"file_path":"many.txt"}`,
			contains: []string{"  2000\tL2000\n", "[showing lines 1-2000 of 2500; continue with offset=2001]"},
			excludes: []string{"L2001"}},
		{name: "offset 0 means start", input: `{"file_path":"a.txt","offset":0}`, contains: []string{"     1\talpha"}},
		{name: "offset past end", input: `{"file_path":"a.txt","offset":9}`, contains: []string{"has 3 lines; offset 9 is past the end"}},
		{name: "long line cut", input: `{"file_path":"long.txt"}`,
			contains: []string{"[line truncated, 5000 chars]", "     2\tshort"}},
		{name: "empty file", input: `{"file_path":"empty.txt"}`, contains: []string{"is empty"}},
		{name: "nested", input: `{"file_path":"dir/nested.go"}`, contains: []string{"package dir"}},
		{name: "protected path is readable", input: `{"file_path":".git/config"}`, contains: []string{"[core]"}},
		{name: "binary refused", input: `{"file_path":"bin.dat"}`, isErr: true, contains: []string{"binary"}},
		{name: "directory refused", input: `{"file_path":"dir"}`, isErr: true, contains: []string{"is a directory"}},
		{name: "missing file", input: `{"file_path":"nope.txt"}`, isErr: true, contains: []string{"does not exist"}},
		{name: "dot dot escape", input: `{"file_path":"../x"}`, isErr: true, contains: []string{"outside the workspace"}},
		{name: "etc passwd", input: `{"file_path":"/etc/passwd"}`, isErr: true, contains: []string{"outside the workspace"}, excludes: []string{"root:"}},
		{name: "symlinked dir out", input: `{"file_path":"out/secret.txt"}`, isErr: true, contains: []string{"outside the workspace"}, excludes: []string{"TOP SECRET"}},
		{name: "symlinked file out", input: `{"file_path":"secretlink"}`, isErr: true, contains: []string{"outside the workspace"}, excludes: []string{"TOP SECRET"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, tools.Read, ws, tc.input)
			require.Equal(t, tc.isErr, res.IsError, "output: %s", res.Output)
			for _, c := range tc.contains {
				require.Contains(t, res.Output, c)
			}
			for _, c := range tc.excludes {
				require.NotContains(t, res.Output, c)
			}
		})
	}
}

func TestReadOutputCap(t *testing.T) {
	ws := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "%s %d\n", strings.Repeat("y", 90), i)
	}
	mkfiles(t, ws, map[string]string{"big.txt": b.String()})
	res, err := (&Tools{}).Read(t.Context(), api.ToolRequest{Workspace: ws, Input: []byte(`{"file_path":"big.txt"}`), MaxOutput: 4000})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.True(t, res.Truncated)
	require.LessOrEqual(t, len(res.Output), 4000)
	require.Contains(t, res.Output, "[output truncated: ")
	require.Regexp(t, `\[showing lines 1-\d+ of 1000; continue with offset=\d+\]`, res.Output)
	// Only whole lines: every numbered line ends with its own number.
	for _, l := range strings.Split(res.Output, "\n") {
		if strings.HasPrefix(l, " ") {
			var n int
			_, err := fmt.Sscanf(strings.TrimSpace(l[:6]), "%d", &n)
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(l, fmt.Sprintf(" %d", n)), "line cut: %q", l)
		}
	}
}

func TestGlob(t *testing.T) {
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{
		"main.go":           "",
		"old.go":            "",
		"pkg/a.go":          "",
		"pkg/sub/b.go":      "",
		"pkg/sub/c_test.go": "",
		"README.md":         "",
		".git/x.go":         "",
	})
	outside := escapeFixture(t, ws)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "leak.go"), nil, 0o644))
	// mtimes decide the order: old.go oldest, pkg/a.go newest.
	base := time.Now().Add(-time.Hour)
	for i, p := range []string{"old.go", "main.go", "pkg/sub/b.go", "pkg/sub/c_test.go", "README.md", "pkg/a.go"} {
		mt := base.Add(time.Duration(i) * time.Minute)
		require.NoError(t, os.Chtimes(filepath.Join(ws, p), mt, mt))
	}
	tools := &Tools{}
	tests := []struct {
		name  string
		input string
		want  string
		isErr bool
	}{
		{"recursive newest first", `{"pattern":"**/*.go"}`, "pkg/a.go\npkg/sub/c_test.go\npkg/sub/b.go\nmain.go\nold.go\n", false},
		{"top level only", `{"pattern":"*.go"}`, "main.go\nold.go\n", false},
		{"in path, relative to it", `{"pattern":"*.go","path":"pkg/sub"}`, "pkg/sub/c_test.go\npkg/sub/b.go\n", false},
		{"braces", `{"pattern":"**/*.{md,txt}"}`, "README.md\n", false},
		{"tests only", `{"pattern":"**/*_test.go"}`, "pkg/sub/c_test.go\n", false},
		{"no match", `{"pattern":"**/*.rs"}`, "No files found", false},
		{"path escape", `{"pattern":"*","path":"../"}`, "outside the workspace", true},
		{"path symlink out", `{"pattern":"*","path":"out"}`, "outside the workspace", true},
		{"path is a file", `{"pattern":"*","path":"main.go"}`, "not a directory", true},
		{"path missing", `{"pattern":"*","path":"nope"}`, "does not exist", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, tools.Glob, ws, tc.input)
			require.Equal(t, tc.isErr, res.IsError, res.Output)
			if tc.isErr {
				require.Contains(t, res.Output, tc.want)
			} else {
				require.Equal(t, tc.want, res.Output)
			}
			require.NotContains(t, res.Output, "leak.go", "followed a symlink out")
			require.NotContains(t, res.Output, ".git/")
		})
	}
}

func TestGlobCap(t *testing.T) {
	ws := t.TempDir()
	for i := 0; i < 1100; i++ {
		mkfiles(t, ws, map[string]string{fmt.Sprintf("f/%04d.txt", i): ""})
	}
	res := callTool(t, (&Tools{}).Glob, ws, `{"pattern":"**/*.txt"}`)
	require.False(t, res.IsError)
	require.True(t, res.Truncated)
	require.Equal(t, maxGlobResults+1, strings.Count(res.Output, "\n"))
	require.Contains(t, res.Output, "[1000 of 1100 matches shown")
}

func TestGrep(t *testing.T) {
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{
		"a.go":        "package a\n\nfunc Hello() {}\nfunc other() {}\n// hello again\n",
		"b/b.go":      "package b\nvar x = Hello()\n",
		"b/notes.txt": "Hello from notes\n",
		"bin.dat":     "Hello\x00binary",
		".git/HEAD":   "Hello ref\n",
		"ctx.txt":     "1\n2\nMATCH\n4\n5\n6\n7\nMATCH\n9\n",
	})
	escapeFixture(t, ws)
	big := strings.Repeat("Hello\n", (maxGrepFileSize/6)+10)
	mkfiles(t, ws, map[string]string{"huge.txt": big})
	tools := &Tools{}
	tests := []struct {
		name  string
		input string
		want  string
		isErr bool
	}{
		{"files default, lexical order", `{"pattern":"Hello"}`, "a.go\nb/b.go\nb/notes.txt\n", false},
		{"case insensitive", `{"pattern":"hello","-i":true,"glob":"*.go"}`, "a.go\nb/b.go\n", false},
		{"content with numbers", `{"pattern":"func \\w+","output_mode":"content","path":"a.go"}`, "a.go:3:func Hello() {}\na.go:4:func other() {}\n", false},
		{"content without numbers", `{"pattern":"^var","output_mode":"content","-n":false}`, "b/b.go:var x = Hello()\n", false},
		{"count", `{"pattern":"Hello","output_mode":"count","glob":"**/*.go"}`, "a.go:1\nb/b.go:1\n[2 matching lines in 2 files]\n", false},
		{"context", `{"pattern":"MATCH","output_mode":"content","context":1,"path":"ctx.txt"}`,
			"ctx.txt-2-2\nctx.txt:3:MATCH\nctx.txt-4-4\n--\nctx.txt-7-7\nctx.txt:8:MATCH\nctx.txt-9-9\n", false},
		{"context merges adjacent", `{"pattern":"MATCH","output_mode":"content","context":3,"path":"ctx.txt"}`,
			"ctx.txt-1-1\nctx.txt-2-2\nctx.txt:3:MATCH\nctx.txt-4-4\nctx.txt-5-5\nctx.txt-6-6\nctx.txt-7-7\nctx.txt:8:MATCH\nctx.txt-9-9\n", false},
		{"path dir", `{"pattern":"Hello","path":"b"}`, "b/b.go\nb/notes.txt\n", false},
		{"glob with slash", `{"pattern":"Hello","glob":"b/*.txt"}`, "b/notes.txt\n", false},
		{"no match", `{"pattern":"zzz"}`, "No matches found", false},
		{"escape", `{"pattern":"SECRET","path":"../"}`, "outside the workspace", true},
		{"symlink out", `{"pattern":"SECRET","path":"out"}`, "outside the workspace", true},
		{"missing path", `{"pattern":"x","path":"nope"}`, "does not exist", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, tools.Grep, ws, tc.input)
			require.Equal(t, tc.isErr, res.IsError, res.Output)
			if tc.isErr {
				require.Contains(t, res.Output, tc.want)
			} else {
				require.Equal(t, tc.want, res.Output)
			}
			require.NotContains(t, res.Output, "SECRET")
		})
	}
}

func TestGrepOutputCap(t *testing.T) {
	ws := t.TempDir()
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "needle %d\n", i)
	}
	mkfiles(t, ws, map[string]string{"n.txt": b.String()})
	res, err := (&Tools{}).Grep(t.Context(), api.ToolRequest{Workspace: ws, MaxOutput: 2000,
		Input: []byte(`{"pattern":"needle","output_mode":"content"}`)})
	require.NoError(t, err)
	require.True(t, res.Truncated)
	require.LessOrEqual(t, len(res.Output), 2000)
	require.Regexp(t, `\[output truncated: \d+ of \d+ bytes shown\]$`, res.Output)
	require.True(t, strings.HasPrefix(res.Output, "n.txt:1:needle 0\n"))

	// A budget smaller than the marker itself keeps no line and says so,
	// instead of failing the tool.
	res, err = (&Tools{}).Grep(t.Context(), api.ToolRequest{Workspace: ws, MaxOutput: 10,
		Input: []byte(`{"pattern":"needle","output_mode":"content"}`)})
	require.NoError(t, err)
	require.True(t, res.Truncated)
	require.Regexp(t, `^\[output truncated: 0 of \d+ bytes shown\]$`, res.Output)
}

func TestWrite(t *testing.T) {
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{"exists.sh": "old\n", ".git/config": "[core]\n"})
	require.NoError(t, os.Chmod(filepath.Join(ws, "exists.sh"), 0o750))
	outside := escapeFixture(t, ws)
	tools := &Tools{}
	tests := []struct {
		name, input, want string
		isErr             bool
		file, content     string // expected file state ("" file: none)
	}{
		{name: "create with parents", input: `{"file_path":"new/deep/f.txt","content":"hi\n"}`, want: "Created new/deep/f.txt (3 bytes)",
			file: "new/deep/f.txt", content: "hi\n"},
		{name: "replace", input: `{"file_path":"exists.sh","content":"new\n"}`, want: "Updated exists.sh",
			file: "exists.sh", content: "new\n"},
		{name: "same content again", input: `{"file_path":"exists.sh","content":"new\n"}`, want: "already has this content",
			file: "exists.sh", content: "new\n"},
		{name: "empty content is valid", input: `{"file_path":"empty.txt","content":""}`, want: "Created empty.txt (0 bytes)",
			file: "empty.txt", content: ""},
		{name: "escape", input: `{"file_path":"../evil.txt","content":"x"}`, want: "outside the workspace", isErr: true},
		{name: "absolute outside", input: jsonArgs(t, map[string]string{"file_path": filepath.Join(outside, "evil.txt"), "content": "x"}), want: "outside the workspace", isErr: true},
		{name: "through symlinked dir", input: `{"file_path":"out/evil.txt","content":"x"}`, want: "outside the workspace", isErr: true},
		{name: "through symlinked file", input: `{"file_path":"secretlink","content":"x"}`, want: "outside the workspace", isErr: true},
		{name: "git hook", input: `{"file_path":".git/hooks/pre-commit","content":"#!/bin/sh\n"}`, want: "protected", isErr: true},
		{name: "git config", input: `{"file_path":".git/config","content":"x"}`, want: "protected", isErr: true,
			file: ".git/config", content: "[core]\n"},
		{name: "custos settings", input: `{"file_path":".custos/settings.json","content":"{}"}`, want: "protected", isErr: true},
		{name: "directory", input: `{"file_path":"new","content":"x"}`, want: "is a directory", isErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, tools.Write, ws, tc.input)
			require.Equal(t, tc.isErr, res.IsError, res.Output)
			require.Contains(t, res.Output, tc.want)
			if tc.file != "" {
				got, err := os.ReadFile(filepath.Join(ws, tc.file))
				require.NoError(t, err)
				require.Equal(t, tc.content, string(got))
			}
		})
	}
	// Mode kept, secret untouched, no hook, no temp files left behind.
	fi, err := os.Stat(filepath.Join(ws, "exists.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	secret, _ := os.ReadFile(filepath.Join(outside, "secret.txt"))
	require.Equal(t, "TOP SECRET\n", string(secret))
	for _, p := range []string{filepath.Join(outside, "evil.txt"), filepath.Join(ws, ".git/hooks/pre-commit"), filepath.Join(ws, ".custos")} {
		_, err := os.Stat(p)
		require.True(t, os.IsNotExist(err), "%s must not exist", p)
	}
	requireNoTempFiles(t, ws)
}

// A reader racing with Write sees the old or the new content, never a mix:
// the write is a rename of a complete file.
// TestWriteAtomic: a reader running while Write replaces a file sees the old
// or the new content, never a partial file. The writer keeps writing until
// the reader has overlapped enough writes, so the test cannot pass with
// reads that all fell between writes.
func TestWriteAtomic(t *testing.T) {
	ws := t.TempDir()
	a := strings.Repeat("A", 1<<20)
	b := strings.Repeat("B", 1<<20)
	mkfiles(t, ws, map[string]string{"f": a})
	// gen is odd while a Write runs; a read during which gen was odd or
	// changed overlapped a write.
	var gen, overlapped atomic.Int64
	const wantOverlaps = 200
	stop := make(chan struct{})
	done := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			g1 := gen.Load()
			got, err := os.ReadFile(filepath.Join(ws, "f"))
			g2 := gen.Load()
			if err != nil {
				bad <- err.Error()
				return
			}
			if s := string(got); s != a && s != b {
				bad <- fmt.Sprintf("torn read: %d bytes", len(s))
				return
			}
			if g1%2 == 1 || g1 != g2 {
				overlapped.Add(1)
			}
		}
	}()
	for i := 0; overlapped.Load() < wantOverlaps && i < 5000 && len(bad) == 0; i++ {
		content := a
		if i%2 == 0 {
			content = b
		}
		gen.Add(1)
		res := callTool(t, (&Tools{}).Write, ws, jsonArgs(t, map[string]string{"file_path": "f", "content": content}))
		gen.Add(1)
		require.False(t, res.IsError, res.Output)
	}
	close(stop)
	<-done
	select {
	case msg := <-bad:
		t.Fatal(msg)
	default:
	}
	require.GreaterOrEqual(t, overlapped.Load(), int64(wantOverlaps), "reads that overlapped a write")
	requireNoTempFiles(t, ws)
}

func requireNoTempFiles(t *testing.T, ws string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		require.NotContains(t, d.Name(), ".custos-tmp-", "temp file left: %s", p)
		return nil
	}))
}

func TestEdit(t *testing.T) {
	const src = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n\tprintln(\"hi\")\n\tfoo()\n}\n"
	tests := []struct {
		name, input, want string
		isErr             bool
		after             string // expected content; "" = unchanged
	}{
		{name: "unique replace", input: `{"file_path":"m.go","old_string":"foo()","new_string":"bar()"}`,
			want: "Edited m.go: replaced 1 occurrence\n     3\tfunc main() {", after: strings.Replace(src, "foo()", "bar()", 1)},
		{name: "not unique", input: `{"file_path":"m.go","old_string":"println(\"hi\")","new_string":"x"}`,
			want: "occurs 2 times", isErr: true},
		{name: "replace all", input: `{"file_path":"m.go","old_string":"println(\"hi\")","new_string":"log()","replace_all":true}`,
			want: "replaced 2 occurrences", after: strings.ReplaceAll(src, "println(\"hi\")", "log()")},
		{name: "not found", input: `{"file_path":"m.go","old_string":"nothing here","new_string":"x"}`,
			want: "old_string not found", isErr: true},
		{name: "already applied", input: `{"file_path":"m.go","old_string":"fooBAR()","new_string":"foo()"}`,
			want: "already applied"},
		{name: "deletion", input: `{"file_path":"m.go","old_string":"\tfoo()\n","new_string":""}`,
			want: "replaced 1 occurrence", after: strings.Replace(src, "\tfoo()\n", "", 1)},
		{name: "deletion not found is an error on a first attempt", input: `{"file_path":"m.go","old_string":"\tgone()\n","new_string":""}`,
			want: "old_string not found", isErr: true},
		{name: "missing file", input: `{"file_path":"nope.go","old_string":"a","new_string":"b"}`, want: "does not exist; use Write", isErr: true},
		{name: "escape", input: `{"file_path":"../m.go","old_string":"a","new_string":"b"}`, want: "outside the workspace", isErr: true},
		{name: "symlink out", input: `{"file_path":"secretlink","old_string":"TOP","new_string":"x"}`, want: "outside the workspace", isErr: true},
		{name: "protected", input: `{"file_path":".git/config","old_string":"core","new_string":"x"}`, want: "protected", isErr: true},
		{name: "directory", input: `{"file_path":"dir","old_string":"a","new_string":"b"}`, want: "is a directory", isErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			mkfiles(t, ws, map[string]string{"m.go": src, ".git/config": "[core]\n", "dir/x": ""})
			require.NoError(t, os.Chmod(filepath.Join(ws, "m.go"), 0o600))
			outside := escapeFixture(t, ws)
			res := callTool(t, (&Tools{}).Edit, ws, tc.input)
			require.Equal(t, tc.isErr, res.IsError, res.Output)
			require.Contains(t, res.Output, tc.want)
			want := tc.after
			if want == "" {
				want = src
			}
			got, err := os.ReadFile(filepath.Join(ws, "m.go"))
			require.NoError(t, err)
			require.Equal(t, want, string(got))
			fi, err := os.Stat(filepath.Join(ws, "m.go"))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "mode kept")
			cfg, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
			require.Equal(t, "[core]\n", string(cfg))
			secret, _ := os.ReadFile(filepath.Join(outside, "secret.txt"))
			require.Equal(t, "TOP SECRET\n", string(secret))
			requireNoTempFiles(t, ws)
		})
	}
}

// Running the same Edit twice (what a Temporal retry after a lost completion
// does) leaves the file as one run would, and the second run succeeds.
func TestEditTwiceIsIdempotent(t *testing.T) {
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{"f.txt": "a = old\nb = old\n"})
	in := `{"file_path":"f.txt","old_string":"old","new_string":"new","replace_all":true}`
	first := callTool(t, (&Tools{}).Edit, ws, in)
	require.False(t, first.IsError, first.Output)
	second := callTool(t, (&Tools{}).Edit, ws, in)
	require.False(t, second.IsError, second.Output)
	require.Contains(t, second.Output, "already applied")
	got, _ := os.ReadFile(filepath.Join(ws, "f.txt"))
	require.Equal(t, "a = new\nb = new\n", string(got))
}

func TestAllCovered(t *testing.T) {
	tests := []struct {
		content, old, new string
		want              bool
	}{
		{"x := foo()", "foo", "foo()", true},
		{"foo() and foo", "foo", "foo()", false},
		{"foo(foo)", "foo", "foo(foo)", true},
		{"none", "foo", "foo()", true},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, allCovered(tc.content, tc.old, tc.new), tc.content)
	}
}

// editRetryWorkflow runs Edit with one retry, the way a workflow would.
func editRetryWorkflow(ctx workflow.Context, req api.ToolRequest) (api.ToolResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 2},
	})
	var res api.ToolResult
	err := workflow.ExecuteActivity(ctx, api.EditActivity, req).Get(ctx, &res)
	return res, err
}

// A worker that dies after Edit wrote the file but before Temporal heard
// back makes Temporal run Edit again. The real Edit runs on both attempts
// here; the first attempt's result is then lost (as with a crash), so the
// second attempt must find the file already edited and neither fail nor
// apply the edit twice.
func TestEditRetriedAfterLostCompletion(t *testing.T) {
	tests := []struct {
		name, file, input, want string
	}{
		{"new contains old", "x := foo\n", `{"file_path":"f","old_string":"foo","new_string":"foo()"}`, "x := foo()\n"},
		{"replace all, new contains old", "a b a\n", `{"file_path":"f","old_string":"a","new_string":"[a]","replace_all":true}`, "[a] b [a]\n"},
		{"deletion", "keep\ndrop me\nkeep\n", `{"file_path":"f","old_string":"drop me\n","new_string":""}`, "keep\nkeep\n"},
		{"plain", "old\n", `{"file_path":"f","old_string":"old","new_string":"new"}`, "new\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			mkfiles(t, ws, map[string]string{"f": tc.file})
			tools := &Tools{}
			var attempts atomic.Int32
			crashAfterFirst := func(ctx context.Context, req api.ToolRequest) (api.ToolResult, error) {
				res, err := tools.Edit(ctx, req)
				if activity.GetInfo(ctx).Attempt == 1 {
					attempts.Add(1)
					return api.ToolResult{}, errors.New("simulated worker crash after the write")
				}
				attempts.Add(1)
				return res, err
			}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflow(editRetryWorkflow)
			env.RegisterActivityWithOptions(crashAfterFirst, activity.RegisterOptions{Name: api.EditActivity})
			env.ExecuteWorkflow(editRetryWorkflow, api.ToolRequest{Workspace: ws, Input: json.RawMessage(tc.input)})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res api.ToolResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, int32(2), attempts.Load())
			require.False(t, res.IsError, res.Output)
			require.Contains(t, res.Output, "already applied")
			got, err := os.ReadFile(filepath.Join(ws, "f"))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// Glob and Grep never list custos' own files back to the model: the
// transcripts and audits older jobs keep in the workspace hold everything the
// model read.
func TestGlobGrepLeaveCustosOwnFilesOut(t *testing.T) {
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{
		".custos/sessions/job.jsonl": `{"seq":1,"content":"TODO secret the model once read"}`,
		".custos/audit/job.jsonl":    `{"seq":1,"reason":"TODO"}`,
		".custos/settings.json":      `{"permissions":{"allow":["Bash(TODO:*)"]}}`,
		"main.go":                    "// TODO",
	})
	tools := &Tools{}
	for _, tc := range []struct {
		name  string
		call  toolFunc
		input string
	}{
		{"glob everything", tools.Glob, `{"pattern":"**/*"}`},
		{"glob the directory itself", tools.Glob, `{"pattern":"*","path":".custos/sessions"}`},
		{"grep everything", tools.Grep, `{"pattern":"TODO","output_mode":"content"}`},
		{"grep the directory itself", tools.Grep, `{"pattern":"TODO","path":".custos/audit"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, tc.call, ws, tc.input)
			require.False(t, res.IsError, res.Output)
			require.NotContains(t, res.Output, "sessions")
			require.NotContains(t, res.Output, "audit")
			require.NotContains(t, res.Output, "secret")
		})
	}
	res := callTool(t, tools.Glob, ws, `{"pattern":"**/*"}`)
	require.Contains(t, res.Output, ".custos/settings.json", "the project's shared settings are the project's")
	require.Contains(t, res.Output, "main.go")
}
