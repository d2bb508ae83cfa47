package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
)

func TestPreview(t *testing.T) {
	many := strings.Repeat("line\n", 500)
	for _, tc := range []struct {
		name, tool, existing string
		input                map[string]any
		want                 api.PreviewResult
	}{
		{name: "edit without final newline", tool: api.EditActivity, existing: "a\nb",
			input: map[string]any{"file_path": "f", "old_string": "b", "new_string": "c"},
			want:  api.PreviewResult{Diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"}},
		{name: "write adds a final newline", tool: api.WriteActivity, existing: "a",
			input: map[string]any{"file_path": "f", "content": "a\n"},
			want:  api.PreviewResult{Diff: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"}},
		{name: "write of the same content", tool: api.WriteActivity, existing: "same\n",
			input: map[string]any{"file_path": "f", "content": "same\n"},
			want:  api.PreviewResult{Note: "f already has this content; nothing would change"}},
		{name: "write outside the workspace fails", tool: api.WriteActivity,
			input: map[string]any{"file_path": "../x", "content": "x"},
			want:  api.PreviewResult{Failed: "Write: ../x: path is outside the workspace"}},
		{name: "edit with bad arguments fails", tool: api.EditActivity, existing: "a\n",
			input: map[string]any{"file_path": "f", "old_string": "a"},
			want:  api.PreviewResult{Failed: "Edit: missing required parameter(s): new_string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if tc.existing != "" {
				require.NoError(t, os.WriteFile(filepath.Join(ws, "f"), []byte(tc.existing), 0o644))
			}
			in, _ := json.Marshal(tc.input)
			got, err := (&Tools{}).Preview(context.Background(), api.PreviewRequest{Tool: tc.tool, Call: api.ToolRequest{Workspace: ws, Input: in}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if tc.existing != "" {
				b, _ := os.ReadFile(filepath.Join(ws, "f"))
				assert.Equal(t, tc.existing, string(b), "a preview writes nothing")
			}
		})
	}
	t.Run("a long diff is cut with a count", func(t *testing.T) {
		ws := t.TempDir()
		in, _ := json.Marshal(map[string]any{"file_path": "big", "content": many})
		got, err := (&Tools{}).Preview(context.Background(), api.PreviewRequest{Tool: api.WriteActivity, Call: api.ToolRequest{Workspace: ws, Input: in}})
		require.NoError(t, err)
		// 3 header lines + 500 added lines; 200 are shown.
		assert.Equal(t, 503-previewMaxLines, got.Omitted)
		assert.Equal(t, previewMaxLines, strings.Count(got.Diff, "\n"))
		assert.True(t, strings.HasSuffix(got.Text(), fmt.Sprintf("… %d more diff lines not shown", got.Omitted)))
	})
}
