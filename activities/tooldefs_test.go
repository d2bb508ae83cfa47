package activities

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/sandbox"
)

// Each schema is valid JSON, names exactly the fields its tool decodes (a
// schema/struct mismatch would make the model send arguments the tool then
// rejects), and the list is byte-identical from call to call.
func TestToolDefinitions(t *testing.T) {
	defs := ToolDefinitions()
	require.Len(t, defs, 6)
	var names []string
	for _, d := range defs {
		require.Equal(t, "function", string(d.Type))
		name := d.Function.Name
		names = append(names, name)
		require.True(t, KnownTool(name))
		require.NotEmpty(t, d.Function.Description)

		raw, err := json.Marshal(d.Function.Parameters)
		require.NoError(t, err)
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties bool                       `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(raw, &schema), name)
		require.Equal(t, "object", schema.Type)
		require.False(t, schema.AdditionalProperties, "%s: unknown fields are rejected, say so", name)

		for p := range schema.Properties {
			// A one-field object with that property decodes without an
			// unknown-field error.
			probe := `{"` + p + `":null}`
			err := decodeInput(json.RawMessage(probe), newInputFor(name))
			require.NoError(t, err, "%s: schema property %q is not accepted by the tool", name, p)
		}
		for _, r := range schema.Required {
			_, ok := schema.Properties[r]
			require.True(t, ok, "%s: required %q not in properties", name, r)
		}
	}
	require.Equal(t, []string{"Read", "Glob", "Grep", "Write", "Edit", "Bash"}, names)

	// Write, Edit and Bash describe the one protected list.
	for _, d := range defs {
		switch d.Function.Name {
		case WriteActivity, EditActivity, BashActivity:
			require.Contains(t, d.Function.Description, sandbox.ProtectedSummary(), d.Function.Name)
		}
	}

	a, err := json.Marshal(ToolDefinitions())
	require.NoError(t, err)
	b, err := json.Marshal(ToolDefinitions())
	require.NoError(t, err)
	require.Equal(t, a, b)
}

func newInputFor(tool string) any {
	switch tool {
	case ReadActivity:
		return &readInput{}
	case GlobActivity:
		return &globInput{}
	case GrepActivity:
		return &grepInput{}
	case WriteActivity:
		return &writeInput{}
	case EditActivity:
		return &editInput{}
	case BashActivity:
		return &bashInput{}
	}
	return nil
}

func TestIsReadOnlyAndKnownTool(t *testing.T) {
	tests := []struct {
		tool            string
		known, readOnly bool
	}{
		{"Read", true, true}, {"Glob", true, true}, {"Grep", true, true},
		{"Write", true, false}, {"Edit", true, false}, {"Bash", true, false},
		{"read", false, false}, {"WebFetch", false, false}, {"", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			require.Equal(t, tc.known, KnownTool(tc.tool))
			require.Equal(t, tc.readOnly, IsReadOnly(tc.tool))
		})
	}
}

func TestSummarize(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		tool, input, want string
	}{
		{"Read", `{"file_path":"README.md"}`, "Read README.md"},
		{"Read", `{"file_path":"a.go","offset":120,"limit":40}`, "Read a.go from line 120"},
		{"Glob", `{"pattern":"**/*.go","path":"cmd"}`, "Glob **/*.go in cmd"},
		{"Grep", `{"pattern":"func main","glob":"*.go"}`, `Grep "func main" (*.go)`},
		{"Write", `{"file_path":"x/y.txt","content":"..."}`, "Write x/y.txt"},
		{"Edit", `{"file_path":"src/a.go","old_string":"a","new_string":"b"}`, "Edit src/a.go"},
		{"Edit", `{"file_path":"a.go","old_string":"a","new_string":"b","replace_all":true}`, "Edit a.go (replace all)"},
		{"Bash", `{"command":"go test ./..."}`, "Bash: go test ./..."},
		{"Bash", `{"command":"cd x &&\n  make\tall"}`, "Bash: cd x && make all"},
		{"Bash", `not json`, "Bash (invalid arguments)"},
		{"Mystery", `{"b":1,"a":2}`, `Mystery {"a":2,"b":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, Summarize(tc.tool, json.RawMessage(tc.input)))
		})
	}
	s := Summarize("Bash", json.RawMessage(`{"command":"echo `+long+`"}`))
	require.Equal(t, 100, utf8.RuneCountInString(s))
	require.True(t, strings.HasSuffix(s, "…"))
	require.True(t, strings.HasPrefix(s, "Bash: echo aaa"))
}
