package activities

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/sandbox"
)

// Each schema is valid JSON, names exactly the fields its tool decodes (a
// schema/struct mismatch would make the model send arguments the tool then
// rejects) and the fields written here by hand, and the list goes out in a
// fixed order with each schema byte for byte as written (a stable prefix is
// what prompt caching needs).
func TestToolDefinitions(t *testing.T) {
	defs := ToolDefinitions()
	require.Len(t, defs, 6)
	want := map[string]struct{ properties, required []string }{
		"Read":  {[]string{"file_path", "limit", "offset"}, []string{"file_path"}},
		"Glob":  {[]string{"path", "pattern"}, []string{"pattern"}},
		"Grep":  {[]string{"-i", "-n", "context", "glob", "output_mode", "path", "pattern"}, []string{"pattern"}},
		"Write": {[]string{"content", "file_path"}, []string{"file_path", "content"}},
		"Edit":  {[]string{"file_path", "new_string", "old_string", "replace_all"}, []string{"file_path", "old_string", "new_string"}},
		"Bash":  {[]string{"command", "description", "timeout"}, []string{"command"}},
	}
	var names []string
	for _, d := range defs {
		require.Equal(t, "function", string(d.Type))
		name := d.Function.Name
		names = append(names, name)
		require.True(t, KnownTool(name))
		desc := d.Function.Description
		require.NotEmpty(t, desc)
		// The .md files are embedded as written: no placeholder left over,
		// no newline or space an editor added at either end.
		require.NotContains(t, desc, "{{", "%s: unknown placeholder in its .md", name)
		require.Equal(t, strings.TrimSpace(desc), desc, "%s: description has surrounding whitespace", name)

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
		props := make([]string, 0, len(schema.Properties))
		for p := range schema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		require.Equal(t, want[name].properties, props, name)
		require.Equal(t, want[name].required, schema.Required, name)
	}
	require.Equal(t, []string{"Read", "Glob", "Grep", "Write", "Edit", "Bash"}, names)

	// Write, Edit and Bash describe the one protected list.
	for _, d := range defs {
		switch d.Function.Name {
		case WriteActivity, EditActivity, BashActivity:
			require.Contains(t, d.Function.Description, sandbox.ProtectedSummary(), d.Function.Name)
		}
	}

	// The schema is sent as written, not re-encoded: its own key order.
	raw, err := json.Marshal(defs)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"name":"Bash",`)
	require.Contains(t, string(raw), `"parameters":{"type":"object","properties":{"command":{"type":"string","description":"The command to run"},"timeout":{`)
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
			require.Equal(t, tc.readOnly, approval.IsReadOnly(tc.tool), "the approval pipeline's read-only set")
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
