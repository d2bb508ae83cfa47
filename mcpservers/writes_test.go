package mcpservers

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filesystemServer is the official filesystem server installed globally
// from npm (make deps installs it).
func filesystemServer(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("mcp-server-filesystem")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mcp-server-filesystem not installed: make deps installs @modelcontextprotocol/server-filesystem")
		}
		t.Skip("mcp-server-filesystem not installed (npm install -g @modelcontextprotocol/server-filesystem)")
	}
	return bin
}

// fsRig is a git workspace served by the filesystem server, writing it or
// not.
func fsRig(t *testing.T, write bool) *rig { return fsRigB(t, write) }

func fsRigB(t testing.TB, write bool) *rig {
	t.Helper()
	bin := filesystemServer(t)
	r := newRig(t, nil)
	entry := map[string]any{"command": bin, "args": []string{r.ws}}
	if write {
		entry["writeWorkspace"] = true
	}
	r.writeUser(t, map[string]any{"mcpServers": map[string]any{"fs": entry}})
	out, err := exec.Command("git", "init", "-q", r.ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(filepath.Join(r.ws, "secret.txt"), []byte("keep\n"), 0o644))
	return r
}

// writeFile asks the server to write rel, with lim, and says what the
// call answered and what it wrote; hooked says the merge hook saw rel in
// the upper layer.
func (r *rig) writeFile(t *testing.T, rel, content string, lim Limits) (text string, isErr bool, w *Writes, hooked bool) {
	t.Helper()
	ctx, w := WithWrites(context.Background(), func(upper string) (func(error), error) {
		_, err := os.Lstat(filepath.Join(upper, rel))
		hooked = err == nil
		return func(error) {}, nil
	})
	b, _ := json.Marshal(map[string]any{"path": filepath.Join(r.ws, rel), "content": content})
	res, err := r.pool.Call(ctx, r.ws, "fs", "write_file", b, lim)
	require.NoError(t, err)
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n"), res.IsError, w, hooked
}

// A server whose entry says writeWorkspace writes the workspace through
// its overlay: the write lands once the call ended, after the merge hook
// (the job's checkpoint) saw it; the server is started afresh for the
// next call, which sees the file.
func TestWritingServerWritesThroughTheCheck(t *testing.T) {
	r := fsRig(t, true)
	text, isErr, w, hooked := r.writeFile(t, "hello.txt", "hello\n", Limits{})
	require.False(t, isErr, text)
	assert.True(t, w.Wrote)
	assert.True(t, hooked, "the checkpoint's hook saw the write before it was applied")
	got, err := os.ReadFile(filepath.Join(r.ws, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))

	b, _ := json.Marshal(map[string]any{"path": filepath.Join(r.ws, "hello.txt")})
	res, err := r.pool.Call(context.Background(), r.ws, "fs", "read_text_file", b, Limits{})
	require.NoError(t, err)
	require.False(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "hello")
}

// What the protected paths, the Edit deny rules and the host guard refuse
// is not applied: .git/config and .git/hooks and an Edit-denied file are
// read-only in the server's sandbox (its temporary file beside them is
// applied, as a command's would be); a protected name the workspace does
// not have (no placeholder holds it for a server) is withheld.
func TestWritingServerCannotWriteWhatTheCheckRefuses(t *testing.T) {
	r := fsRig(t, true)
	cfgBefore, err := os.ReadFile(filepath.Join(r.ws, ".git/config"))
	require.NoError(t, err)
	lim := Limits{EditDeny: []string{"secret.txt"}}
	for _, rel := range []string{".git/config", ".git/hooks/pre-commit", "secret.txt"} {
		text, isErr, w, _ := r.writeFile(t, rel, "#!/bin/sh\necho pwned\n", lim)
		assert.True(t, isErr, "%s: %s", rel, text)
		// Written in place: read-only; renamed over from a temporary
		// file: the read-only mount point cannot be replaced.
		assert.Regexp(t, "EROFS|EBUSY", text, rel)
		if w.Wrote {
			assert.Empty(t, w.Report.Unmerged, rel)
		}
	}
	cfgAfter, err := os.ReadFile(filepath.Join(r.ws, ".git/config"))
	require.NoError(t, err)
	assert.Equal(t, string(cfgBefore), string(cfgAfter))
	_, err = os.Lstat(filepath.Join(r.ws, ".git/hooks/pre-commit"))
	assert.True(t, os.IsNotExist(err), "no hook was planted")
	got, _ := os.ReadFile(filepath.Join(r.ws, "secret.txt"))
	assert.Equal(t, "keep\n", string(got))

	text, isErr, w, _ := r.writeFile(t, ".mcp.json", `{"mcpServers":{}}`, lim)
	require.False(t, isErr, "the write reaches the overlay: %s", text)
	require.True(t, w.Wrote)
	_, err = os.Lstat(filepath.Join(r.ws, ".mcp.json"))
	assert.True(t, os.IsNotExist(err), ".mcp.json was not applied")
	require.NotEmpty(t, w.Report.Withheld)
	assert.Equal(t, ".mcp.json", w.Report.Withheld[0].Path)
	assert.Contains(t, w.Report.HostConfigNote(), "did not apply")
}

// A checkpoint that cannot be recorded keeps the write out of the
// workspace, as for a Bash command.
func TestWritingServerUnrecordedWriteIsNotApplied(t *testing.T) {
	r := fsRig(t, true)
	ctx, w := WithWrites(context.Background(), func(string) (func(error), error) {
		return nil, os.ErrPermission
	})
	b, _ := json.Marshal(map[string]any{"path": filepath.Join(r.ws, "a.txt"), "content": "a"})
	_, err := r.pool.Call(ctx, r.ws, "fs", "write_file", b, Limits{})
	require.NoError(t, err)
	assert.True(t, w.Wrote)
	assert.Contains(t, w.Report.Unmerged, "none of it was applied")
	_, err = os.Lstat(filepath.Join(r.ws, "a.txt"))
	assert.True(t, os.IsNotExist(err))
}

// Without writeWorkspace the same call fails: the workspace is read-only.
func TestServerWithoutWriteWorkspaceCannotWrite(t *testing.T) {
	r := fsRig(t, false)
	text, isErr, w, _ := r.writeFile(t, "hello.txt", "hello\n", Limits{})
	assert.True(t, isErr)
	assert.Contains(t, text, "EROFS")
	assert.False(t, w.Wrote)
	_, err := os.Lstat(filepath.Join(r.ws, "hello.txt"))
	assert.True(t, os.IsNotExist(err))
}

// A writing server reads the workspace as it is at each call, not as its
// overlay first saw it: a file replaced meanwhile (renamed over, as a
// Write or an editor's save does) reads new, and a file made meanwhile
// is listed.
func TestWritingServerSeesTheWorkspaceAsItIsNow(t *testing.T) {
	r := fsRig(t, true)
	p := filepath.Join(r.ws, "a.txt")
	require.NoError(t, os.WriteFile(p, []byte("one"), 0o644))
	read := func() string {
		b, _ := json.Marshal(map[string]any{"path": p})
		res, err := r.pool.Call(context.Background(), r.ws, "fs", "read_text_file", b, Limits{})
		require.NoError(t, err)
		require.False(t, res.IsError)
		return res.Content[0].(*mcp.TextContent).Text
	}
	assert.Equal(t, "one", read())
	require.NoError(t, os.WriteFile(p+".tmp", []byte("two"), 0o644))
	require.NoError(t, os.Rename(p+".tmp", p))
	assert.Equal(t, "two", read())
	require.NoError(t, os.WriteFile(p, []byte("three"), 0o644))
	assert.Equal(t, "three", read())
}

// A repository the server builds call by call, whose config names a
// program for git on the host to run, is neutralised by the host guard
// as a command's would be: the config is applied stripped of it.
func TestWritingServerPlantedGitConfigIsNeutralised(t *testing.T) {
	r := fsRig(t, true)
	call := func(tool, rel string, args map[string]any) *Writes {
		ctx, w := WithWrites(context.Background(), nil)
		args["path"] = filepath.Join(r.ws, rel)
		b, _ := json.Marshal(args)
		res, err := r.pool.Call(ctx, r.ws, "fs", tool, b, Limits{})
		require.NoError(t, err)
		require.False(t, res.IsError, "%s %s", tool, rel)
		return w
	}
	for _, d := range []string{"sub", "sub/.git", "sub/.git/objects", "sub/.git/refs"} {
		call("create_directory", d, map[string]any{})
	}
	call("write_file", "sub/.git/HEAD", map[string]any{"content": "ref: refs/heads/main\n"})
	w := call("write_file", "sub/.git/config", map[string]any{"content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"})
	require.NotEmpty(t, w.Report.HostConfig)
	assert.Equal(t, "sub/.git/config", w.Report.HostConfig[0].Path)
	assert.Contains(t, w.Report.HostConfig[0].Action, "core.fsmonitor")
	b, err := os.ReadFile(filepath.Join(r.ws, "sub/.git/config"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "fsmonitor")
}
