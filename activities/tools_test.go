package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

// toolFunc is the signature every tool activity has.
type toolFunc func(context.Context, api.ToolRequest) (api.ToolResult, error)

// callTool runs one tool the way the worker does, minus Temporal: the
// activity body is the same function.
func callTool(t *testing.T, fn toolFunc, ws, input string) api.ToolResult {
	t.Helper()
	res, err := fn(context.Background(), api.ToolRequest{Workspace: ws, Input: json.RawMessage(input)})
	require.NoError(t, err, "a tool must report problems as results, not activity errors")
	return res
}

// mkfiles writes files (path → content) under ws.
func mkfiles(t *testing.T, ws string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(ws, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

func jsonArgs(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Every tool decodes strictly and answers bad input with an error result
// that names the problem.
func TestToolsRejectBadInput(t *testing.T) {
	ws := t.TempDir()
	mkfiles(t, ws, map[string]string{"a.txt": "hello\n"})
	tools := &Tools{}
	fns := map[string]toolFunc{
		"Read": tools.Read, "Glob": tools.Glob, "Grep": tools.Grep,
		"Write": tools.Write, "Edit": tools.Edit, "Bash": tools.Bash,
	}
	tests := []struct {
		tool, input, want string
	}{
		{"Read", `not json`, "not a JSON object"},
		{"Read", ``, "missing arguments"},
		{"Read", `[1,2]`, "not a JSON object"},
		{"Read", `{"file_path":"a.txt","bogus":1}`, `unknown field "bogus"`},
		{"Read", `{}`, "missing required parameter(s): file_path"},
		{"Read", `{"file_path":null}`, "missing required parameter(s): file_path"},
		{"Read", `{"file_path":"a.txt","offset":"10"}`, "cannot unmarshal string"},
		{"Read", `{"file_path":"a.txt"} {"x":1}`, "not a JSON object"},
		{"Read", `{"file_path":"a.txt","limit":0}`, "limit must be a positive"},
		{"Read", `{"file_path":"a.txt","offset":-3}`, "offset must be"},
		{"Glob", `{"path":"."}`, "missing required parameter(s): pattern"},
		{"Glob", `{"pattern":"[a-"}`, "invalid pattern"},
		{"Glob", `{"pattern":"/etc/*"}`, "must be relative"},
		{"Glob", `{"pattern":"../*"}`, "must be relative"},
		{"Grep", `{"pattern":"("}`, "invalid regular expression"},
		{"Grep", `{"pattern":"x","output_mode":"lines"}`, "output_mode must be"},
		{"Grep", `{"pattern":"x","-C":3}`, `unknown field "-C"`},
		{"Grep", `{"pattern":"x","context":99}`, "context must be between"},
		{"Write", `{"file_path":"b.txt"}`, "missing required parameter(s): content"},
		{"Write", `{"content":"x"}`, "missing required parameter(s): file_path"},
		{"Edit", `{"file_path":"a.txt","old_string":"hello"}`, "missing required parameter(s): new_string"},
		{"Edit", `{"file_path":"a.txt","old_string":"","new_string":"x"}`, "old_string must not be empty"},
		{"Edit", `{"file_path":"a.txt","old_string":"x","new_string":"x"}`, "identical"},
		{"Bash", `{"cmd":"ls"}`, `unknown field "cmd"`},
		{"Bash", `{"command":"  "}`, "command must not be empty"},
		{"Bash", `{"command":"ls","timeout":700000}`, "must be between 1 and 600000"},
		{"Bash", `{"command":"ls"}`, "no sandbox is configured"},
	}
	for _, tc := range tests {
		t.Run(tc.tool+" "+tc.input, func(t *testing.T) {
			res := callTool(t, fns[tc.tool], ws, tc.input)
			require.True(t, res.IsError, "output: %s", res.Output)
			require.Contains(t, res.Output, tc.want)
			require.True(t, strings.HasPrefix(res.Output, tc.tool+": "), "error names its tool: %s", res.Output)
		})
	}
	// Nothing was written by any of the rejected calls.
	got, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(got))
	_, err = os.Stat(filepath.Join(ws, "b.txt"))
	require.True(t, os.IsNotExist(err))
}

func TestCapHelpers(t *testing.T) {
	long := strings.Repeat("é", 5000) // 2-byte runes: cuts must not split them
	tests := []struct {
		name  string
		fn    func(string, int) (string, bool)
		in    string
		max   int
		trunc bool
	}{
		{"head short", toolkit.CapHead, "abc", 100, false},
		{"head long", toolkit.CapHead, long, 1000, true},
		{"headtail short", toolkit.CapHeadTail, "abc", 100, false},
		{"headtail long", toolkit.CapHeadTail, long, 1000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, tr := tc.fn(tc.in, tc.max)
			require.Equal(t, tc.trunc, tr)
			require.LessOrEqual(t, len(out), tc.max)
			require.True(t, utf8.ValidString(out))
			if tr {
				require.Contains(t, out, "[output truncated: ")
				require.Contains(t, out, " of 10000 bytes shown]")
			} else {
				require.Equal(t, tc.in, out)
			}
		})
	}
	// toolkit.CapHeadTail keeps both ends.
	s := "BEGIN" + strings.Repeat("x", 10000) + "END"
	out, _ := toolkit.CapHeadTail(s, 500)
	require.True(t, strings.HasPrefix(out, "BEGIN"))
	require.True(t, strings.HasSuffix(out, "END"))
}
