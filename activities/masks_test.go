package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
)

// Glob and Grep leave Read-denied files out, as the sandbox hides them
// from commands: by rule, below a denied directory, and under another name
// (a hard link). Without the rules the same calls list them.
func TestGlobGrepLeaveMaskedFilesOut(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	mkfiles(t, ws, map[string]string{
		".env":             "KEY=topsecret",
		"app/.env":         "KEY=topsecret",
		"secrets/prod.key": "KEY=topsecret",
		"src/main.go":      "KEY=public",
	})
	require.NoError(t, os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "src/copy.txt")))
	tools := &Tools{}
	denied := []string{".env", "secrets/**"}
	run := func(fn toolFunc, input string, deny []string) string {
		res, err := fn(context.Background(), api.ToolRequest{Workspace: ws, Input: json.RawMessage(input), ReadDeny: deny})
		require.NoError(t, err)
		require.False(t, res.IsError, res.Output)
		return res.Output
	}
	for _, tc := range []struct {
		name  string
		fn    toolFunc
		input string
	}{
		{"glob", tools.Glob, `{"pattern":"**/*"}`},
		{"grep content", tools.Grep, `{"pattern":"KEY","output_mode":"content"}`},
		{"grep files", tools.Grep, `{"pattern":"KEY"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			without := run(tc.fn, tc.input, nil)
			with := run(tc.fn, tc.input, denied)
			for _, rel := range []string{".env", "app/.env", "secrets/prod.key", "src/copy.txt"} {
				assert.Contains(t, without, rel, "without rules %s is listed", rel)
				assert.NotContains(t, with, rel, "with rules %s is left out", rel)
			}
			assert.Contains(t, with, "src/main.go", "the rest is still there")
			assert.NotContains(t, with, "topsecret")
		})
	}
	res, err := tools.Grep(context.Background(), api.ToolRequest{Workspace: ws, Input: json.RawMessage(`{"pattern":"KEY","path":"src/copy.txt","output_mode":"content"}`), ReadDeny: denied})
	require.NoError(t, err)
	assert.NotContains(t, res.Output, "topsecret", "a hard link named directly is left out too")

	res, err = tools.Glob(context.Background(), api.ToolRequest{Workspace: ws, Input: json.RawMessage(`{"pattern":"*"}`), ReadDeny: []string{"re:("}})
	require.NoError(t, err)
	assert.True(t, res.IsError, "a rule that cannot be enforced refuses: %s", res.Output)
}

// Bash hands the job's deny rules to the sandbox: the same command reads
// and overwrites the files without them, and can do neither with them.
func TestBashEnforcesDenyRules(t *testing.T) {
	tools := &Tools{Sandbox: realSandbox(t)}
	for _, withRules := range []bool{false, true} {
		ws, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		mkfiles(t, ws, map[string]string{".env": "KEY=topsecret", "go.mod": "module x\n"})
		req := api.ToolRequest{Workspace: ws, Input: json.RawMessage(`{"command":"cat .env; echo changed > go.mod"}`)}
		if withRules {
			req.ReadDeny, req.EditDeny = []string{".env"}, []string{"go.mod"}
		}
		res, err := tools.Bash(context.Background(), req)
		require.NoError(t, err)
		mod, err := os.ReadFile(filepath.Join(ws, "go.mod"))
		require.NoError(t, err)
		if withRules {
			assert.NotContains(t, res.Output, "topsecret")
			assert.Contains(t, res.Output, "Permission denied")
			assert.Contains(t, res.Output, "deny rules are enforced", "the model is told why")
			assert.Equal(t, "module x\n", string(mod))
		} else {
			assert.Contains(t, res.Output, "topsecret")
			assert.Equal(t, "changed\n", string(mod))
		}
	}
}

// The policy judges the path the model wrote; Read, Write and Edit also
// refuse when the real path (through a symlink, or for Read another name of
// the same file) is denied. Without the rules the same calls work.
func TestFileToolsCheckTheRealPath(t *testing.T) {
	tools := &Tools{}
	for _, tc := range []struct {
		name  string
		fn    toolFunc
		input string
		read  []string
		edit  []string
		check func(t *testing.T, ws string, res api.ToolResult, denied bool)
	}{
		{name: "read through a symlink", fn: tools.Read, input: `{"file_path":"link"}`, read: []string{".env"}},
		{name: "read through a symlinked directory", fn: tools.Read, input: `{"file_path":"s/prod.key"}`, read: []string{"secrets/**"}},
		{name: "read the target of a rule through a symlinked directory", fn: tools.Read, input: `{"file_path":"real-conf/x.pem"}`, read: []string{"conf/*.pem"}},
		{name: "write the target of a rule through a symlinked directory", fn: tools.Write, input: `{"file_path":"real-conf/x.pem","content":"pwned"}`, edit: []string{"conf/*.pem"}},
		{name: "read a hard link", fn: tools.Read, input: `{"file_path":"src/copy.txt"}`, read: []string{".env"}},
		{name: "write through a symlink", fn: tools.Write, input: `{"file_path":"modlink","content":"pwned"}`, edit: []string{"go.mod"}},
		{name: "edit through a symlink", fn: tools.Edit, input: `{"file_path":"modlink","old_string":"module","new_string":"pwned"}`, edit: []string{"go.mod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, withRules := range []bool{false, true} {
				ws, err := filepath.EvalSymlinks(t.TempDir())
				require.NoError(t, err)
				mkfiles(t, ws, map[string]string{".env": "KEY=topsecret", "secrets/prod.key": "KEY=topsecret", "go.mod": "module x\n", "src/main.go": "", "real-conf/x.pem": "KEY=topsecret"})
				require.NoError(t, os.Symlink("real-conf", filepath.Join(ws, "conf")))
				require.NoError(t, os.Symlink(".env", filepath.Join(ws, "link")))
				require.NoError(t, os.Symlink("secrets", filepath.Join(ws, "s")))
				require.NoError(t, os.Symlink("go.mod", filepath.Join(ws, "modlink")))
				require.NoError(t, os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "src/copy.txt")))
				req := api.ToolRequest{Workspace: ws, Input: json.RawMessage(tc.input)}
				if withRules {
					req.ReadDeny, req.EditDeny = tc.read, tc.edit
				}
				res, err := tc.fn(context.Background(), req)
				require.NoError(t, err)
				mod, err := os.ReadFile(filepath.Join(ws, "go.mod"))
				require.NoError(t, err)
				pem, err := os.ReadFile(filepath.Join(ws, "real-conf/x.pem"))
				require.NoError(t, err)
				leaked := strings.Contains(res.Output, "topsecret") || strings.Contains(string(mod), "pwned") || strings.Contains(string(pem), "pwned")
				if withRules {
					assert.False(t, leaked, res.Output)
					assert.True(t, res.IsError)
					assert.Contains(t, res.Output, "denied by a deny rule")
				} else {
					assert.True(t, leaked, "without rules the call works: %s", res.Output)
				}
			}
		})
	}
}
