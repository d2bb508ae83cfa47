package activities

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/protected"
)

// Each schema is valid JSON, names exactly the fields its tool decodes (a
// schema/struct mismatch would make the model send arguments the tool then
// rejects) and the fields written here by hand, and the list goes out in a
// fixed order with each schema byte for byte as written (a stable prefix is
// what prompt caching needs).
func TestToolDefinitions(t *testing.T) {
	defs := ToolDefinitions()
	require.Len(t, defs, 7)
	want := map[string]struct{ properties, required []string }{
		"Read":  {[]string{"file_path", "limit", "offset"}, []string{"file_path"}},
		"Glob":  {[]string{"path", "pattern"}, []string{"pattern"}},
		"Grep":  {[]string{"-i", "-n", "context", "glob", "output_mode", "path", "pattern"}, []string{"pattern"}},
		"LSP":   {[]string{"column", "file_path", "line", "operation"}, []string{"operation", "file_path"}},
		"Write": {[]string{"content", "file_path"}, []string{"file_path", "content"}},
		"Edit":  {[]string{"file_path", "new_string", "old_string", "replace_all"}, []string{"file_path", "old_string", "new_string"}},
		"Bash":  {[]string{"command", "description", "timeout"}, []string{"command"}},
	}
	var names []string
	for _, d := range defs {
		require.Equal(t, "function", string(d.Type))
		name := d.Function.Name
		names = append(names, name)
		require.True(t, api.KnownTool(name))
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
			err := toolkit.DecodeInput(json.RawMessage(probe), newInputFor(name))
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
	require.Equal(t, []string{"Read", "Glob", "Grep", "LSP", "Write", "Edit", "Bash"}, names)
	require.Equal(t, api.ToolNames(), names, "the contract's list of tools, in the same order")

	// Write, Edit and Bash toolkit.Describe the one protected list.
	for _, d := range defs {
		switch d.Function.Name {
		case api.WriteActivity, api.EditActivity, api.BashActivity:
			require.Contains(t, d.Function.Description, protected.Summary(), d.Function.Name)
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
	case api.ReadActivity:
		return &readInput{}
	case api.GlobActivity:
		return &globInput{}
	case api.GrepActivity:
		return &grepInput{}
	case api.LSPActivity:
		return &lspInput{}
	case api.WriteActivity:
		return &writeInput{}
	case api.EditActivity:
		return &editInput{}
	case api.BashActivity:
		return &bashInput{}
	}
	return nil
}
