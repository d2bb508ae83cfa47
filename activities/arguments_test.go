package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
)

// requiredOf is what each tool passes toolkit.DecodeInput as required.
var requiredOf = map[string][]string{
	api.ReadActivity: {"file_path"}, api.GlobActivity: {"pattern"}, api.GrepActivity: {"pattern"},
	api.WriteActivity: {"file_path", "content"}, api.EditActivity: {"file_path", "old_string", "new_string"},
	api.BashActivity: {"command"}, api.LSPActivity: {"operation", "file_path"},
}

// The workflow's check (api.CheckArguments) passes only arguments the tool
// decodes, and refuses every shape the tool refuses: a call that passes it
// is never answered "invalid arguments" after a person approved it.
func TestCheckArgumentsAgreesWithTheTools(t *testing.T) {
	values := []string{`"x"`, `""`, `1`, `0`, `-3`, `1.5`, `1e2`, `true`, `false`, `null`, `[]`, `{}`, `"content"`}
	for _, tool := range api.ToolNames() {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(ToolDefinitions()[indexOf(tool)].Function.Parameters.(json.RawMessage), &schema))
		base := map[string]json.RawMessage{}
		for _, r := range requiredOf[tool] {
			base[r] = json.RawMessage(`"x"`)
		}
		var inputs []string
		for p := range schema.Properties {
			for _, v := range values {
				m := map[string]json.RawMessage{}
				for k, bv := range base {
					m[k] = bv
				}
				m[p] = json.RawMessage(v)
				b, _ := json.Marshal(m)
				inputs = append(inputs, string(b))
			}
		}
		first := requiredOf[tool][0]
		inputs = append(inputs, `{}`, `[]`, `"x"`, `null`,
			fmt.Sprintf(`{"%s":"x","extra":1}`, first),
			fmt.Sprintf(`{"%s":"x","%s":"y"}`, first, first),
			fmt.Sprintf(`{"%s":"x","%s":"y"}`, first, upper(first)))
		for _, in := range inputs {
			checkErr := api.CheckArguments(tool, json.RawMessage(in))
			decodeErr := toolkit.DecodeInput(json.RawMessage(in), newInputFor(tool), requiredOf[tool]...)
			if checkErr == nil {
				require.NoError(t, decodeErr, "%s %s: the workflow would ask a person about arguments the tool refuses", tool, in)
			}
			if decodeErr != nil {
				require.Error(t, checkErr, "%s %s: the tool refuses (%v) what the workflow lets through to a person", tool, in, decodeErr)
			}
		}
	}
}

// The tools themselves refuse a second spelling or a second copy of a
// field: Go's decoder would take "COMMAND" for "command" and keep the last
// value, so the command that ran would not be the one judged and shown.
func TestToolsRefuseFieldAliases(t *testing.T) {
	tools := &Tools{}
	ws := t.TempDir()
	for _, in := range []string{
		`{"command":"echo hi","COMMAND":"touch pwned"}`,
		`{"command":"echo hi","command":"touch pwned"}`,
		`{"command":"echo hi","Command":"touch pwned"}`,
	} {
		res, err := tools.Bash(context.Background(), api.ToolRequest{Workspace: ws, Input: json.RawMessage(in)})
		require.NoError(t, err)
		require.True(t, res.IsError, in)
		require.Contains(t, res.Output, "invalid arguments", in)
	}
	res, err := tools.Write(context.Background(), api.ToolRequest{Workspace: ws,
		Input: json.RawMessage(`{"file_path":"a.txt","content":"x","FILE_PATH":"b.txt"}`)})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.NoFileExists(t, ws+"/a.txt")
	require.NoFileExists(t, ws+"/b.txt")
}

func indexOf(tool string) int {
	for i, n := range api.ToolNames() {
		if n == tool {
			return i
		}
	}
	return -1
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
