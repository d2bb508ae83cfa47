package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
)

// lastContent is a tool call's content in the last update that gave one.
func lastContent(ups []acp.SessionNotification, id string) []acp.ToolCallContent {
	var last []acp.ToolCallContent
	for _, n := range ups {
		if u := n.Update.ToolCallUpdate; u != nil && string(u.ToolCallId) == id && u.Content != nil {
			last = u.Content
		}
	}
	return last
}

// A Bash call's tool_call_update carries its output (the first and last
// 2 KiB of a long one, saying what was cut); a Write over a file and an
// Edit carry ACP's diff with the old and new text, a new file's without
// oldText.
func TestACPToolResultsOutputAndDiff(t *testing.T) {
	script := demomodel.Script(
		demomodel.Calls(demomodel.ToolCall("b1", "Bash", map[string]any{"command": "seq 1 3000"})),
		demomodel.Calls(demomodel.ToolCall("w1", "Write", map[string]any{"file_path": "old.txt", "content": "after\n"})),
		demomodel.Calls(demomodel.ToolCall("e1", "Edit", map[string]any{"file_path": "e.txt", "old_string": "beta", "new_string": "BETA"})),
		demomodel.Calls(demomodel.ToolCall("n1", "Write", map[string]any{"file_path": "new.txt", "content": "fresh\n"})),
		demomodel.Say("done"),
	)
	_, env := acpSetup(t, script)
	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	ws := testenv.Workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "old.txt"), []byte("before\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "e.txt"), []byte("alpha beta gamma\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err)
	res, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("go")}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	assert.Equal(t, acp.StopReasonEndTurn, res.StopReason)
	ups, _ := ed.seen()

	bash := lastContent(ups, "b1")
	require.Len(t, bash, 1)
	require.NotNil(t, bash[0].Content)
	out := bash[0].Content.Content.Text.Text
	assert.True(t, strings.HasPrefix(out, "1\n2\n3\n"), "%.40q", out)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(out), "2999\n3000"), "%q", out[max(len(out)-40, 0):])
	assert.Contains(t, out, "bytes cut: the first")
	assert.Less(t, len(out), 4300, "bounded")

	diff := func(id string) *acp.ToolCallContentDiff {
		for _, c := range lastContent(ups, id) {
			if c.Diff != nil {
				return c.Diff
			}
		}
		return nil
	}
	w := diff("w1")
	require.NotNil(t, w)
	assert.Equal(t, filepath.Join(ws, "old.txt"), w.Path)
	require.NotNil(t, w.OldText, "the old content of a file overwritten")
	assert.Equal(t, "before\n", *w.OldText)
	assert.Equal(t, "after\n", w.NewText)
	e := diff("e1")
	require.NotNil(t, e)
	require.NotNil(t, e.OldText)
	assert.Equal(t, "beta", *e.OldText)
	assert.Equal(t, "BETA", e.NewText)
	n := diff("n1")
	require.NotNil(t, n)
	assert.Nil(t, n.OldText, "a new file has no old text")
	assert.Equal(t, "fresh\n", n.NewText)
}
