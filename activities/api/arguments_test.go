package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each way arguments can differ from what the tool takes is refused, with a
// message that says exactly what is wrong; what the tool takes passes.
func TestCheckArguments(t *testing.T) {
	cases := []struct {
		tool, in, want string // want "" passes
	}{
		{"Write", `{"file_path":"a.txt","content":""}`, ""},
		{"Write", ` {"file_path":"a.txt","content":"x"} `, ""},
		{"Bash", `{"command":"ls","timeout":1000,"description":"list"}`, ""},
		{"Bash", `{"command":"ls","timeout":null}`, ""},
		{"Read", `{"file_path":"a","offset":0,"limit":1}`, ""},
		{"Grep", `{"pattern":"x","-i":true,"-n":false,"context":20,"output_mode":"count"}`, ""},
		{"Edit", `{"file_path":"a","old_string":"x","new_string":"","replace_all":false}`, ""},

		{"Write", `{"file_path":"a.txt","content":"x","mode":"0777"}`, `unknown field "mode": Write takes file_path, content`},
		{"Write", `{"file_path":"a.txt","content":7}`, `field "content" must be a string, got a number`},
		{"Write", `{"file_path":["a"],"content":"x"}`, `field "file_path" must be a string, got an array`},
		{"Write", `{"file_path":"a.txt"}`, `missing required parameter(s): content`},
		{"Write", `{"file_path":"a.txt","content":null}`, `missing required parameter(s): content`},
		{"Write", `{}`, `missing required parameter(s): file_path, content`},
		{"Write", `"a.txt"`, `the arguments must be a JSON object with Write's parameters (file_path, content)`},
		{"Write", `[1]`, `the arguments must be a JSON object with Write's parameters (file_path, content)`},
		{"Write", `{"file_path":"a","content":"x"} {}`, `the arguments have data after the JSON object`},
		{"Bash", `{"command":"echo hi","COMMAND":"rm -rf ."}`, `unknown field "COMMAND" (field names are case-sensitive: "command")`},
		{"Bash", `{"command":"echo hi","command":"rm -rf ."}`, `field "command" is given more than once`},
		{"Bash", `{"command":"ls","dangerouslyDisableSandbox":true}`, `unknown field "dangerouslyDisableSandbox": Bash takes command, timeout, description`},
		{"Bash", `{"command":"ls","sandbox":{"network":"all"}}`, `unknown field "sandbox": Bash takes command, timeout, description`},
		{"Bash", `{"command":"ls","timeout":"5"}`, `field "timeout" must be an integer, got a string`},
		{"Bash", `{"command":"ls","timeout":1.5}`, `field "timeout" must be a whole number, got 1.5`},
		{"Bash", `{"command":"ls","timeout":1e3}`, `field "timeout" must be a whole number, got 1e3`},
		{"Bash", `{"command":"ls","timeout":0}`, `field "timeout" must be between 1 and 600000, got 0`},
		{"Bash", `{"command":"ls","timeout":600001}`, `field "timeout" must be between 1 and 600000, got 600001`},
		{"Grep", `{"pattern":"x","-i":"yes"}`, `field "-i" must be true or false, got a string`},
		{"Grep", `{"pattern":"x","output_mode":"lines"}`, `field "output_mode" must be one of "content", "files_with_matches", "count", got "lines"`},
		{"Edit", `{"file_path":"a","old_string":1,"new_string":"b","x":1}`, `field "old_string" must be a string, got a number; unknown field "x": Edit takes file_path, old_string, new_string, replace_all`},
		{"Nope", `{}`, `unknown tool "Nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.in, func(t *testing.T) {
			err := CheckArguments(tc.tool, json.RawMessage(tc.in))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

// Every tool has a schema CheckArguments reads.
func TestSchemasParse(t *testing.T) {
	for _, name := range ToolNames() {
		s, ok := schemas[name]
		require.True(t, ok, name)
		require.NotEmpty(t, s.order, name)
		require.Len(t, s.order, len(s.Properties), name)
	}
}
