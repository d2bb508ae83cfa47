package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
)

// A result event keeps an excerpt of the output and, for a Write or Edit
// that worked, the change: a Write's old content from its result (absent
// for a new file, not known for a large one), an Edit's region, each side
// bounded.
func TestResultEventExcerptAndChange(t *testing.T) {
	long := strings.Repeat("line\n", 2000)
	e := resultEvent("b", api.BashActivity, json.RawMessage(`{"command":"x"}`), long, api.ToolResult{Output: long})
	assert.Equal(t, len(long), e.OutputBytes)
	assert.Less(t, len(e.Output), 2*api.ExcerptKeep+200)
	assert.Contains(t, e.Output, "bytes cut")
	assert.Nil(t, e.Diff)

	prev := "old\n"
	w := resultEvent("w", api.WriteActivity, json.RawMessage(`{"file_path":"a","content":"new\n"}`), "Updated a", api.ToolResult{Previous: &prev, Existed: true})
	require.NotNil(t, w.Diff)
	require.NotNil(t, w.Diff.OldText)
	assert.Equal(t, "old\n", *w.Diff.OldText)
	assert.Equal(t, "new\n", w.Diff.NewText)

	n := resultEvent("n", api.WriteActivity, json.RawMessage(`{"file_path":"a","content":"x"}`), "Created a", api.ToolResult{})
	assert.Nil(t, n.Diff.OldText)
	assert.True(t, n.Diff.OldKnown)
	big := resultEvent("g", api.WriteActivity, json.RawMessage(`{"file_path":"a","content":"x"}`), "Updated a", api.ToolResult{Existed: true})
	assert.False(t, big.Diff.OldKnown)
	assert.Nil(t, big.Diff.OldText)

	in, _ := json.Marshal(map[string]string{"file_path": "a", "old_string": strings.Repeat("o", api.MaxDiffText+10), "new_string": "n"})
	ed := resultEvent("e", api.EditActivity, in, "ok", api.ToolResult{})
	assert.Len(t, *ed.Diff.OldText, api.MaxDiffText)
	assert.NotEmpty(t, ed.Diff.Cut)
	failed := resultEvent("f", api.EditActivity, in, "Error: no match", api.ToolResult{IsError: true})
	assert.Nil(t, failed.Diff)
}
