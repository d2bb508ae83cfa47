package activities

import (
	"context"
	"os"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

func msgs(texts ...string) []openai.ChatCompletionMessage {
	var out []openai.ChatCompletionMessage
	for _, t := range texts {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: t})
	}
	return out
}

// A retried save (same request again, or an older one) writes nothing twice;
// lines longer than the tail window are found across chunks.
func TestSaveSessionIsIdempotent(t *testing.T) {
	ws := t.TempDir()
	ctx := context.Background()
	big := strings.Repeat("x", 200<<10) // longer than one backwards read
	first := api.SaveSessionRequest{Workspace: ws, JobID: "job/1", Messages: msgs("a", big),
		Audit: []approval.AuditRecord{{Seq: 1, CallID: "c1"}}}
	require.NoError(t, SaveSession(ctx, first))
	require.NoError(t, SaveSession(ctx, first)) // retried
	second := api.SaveSessionRequest{Workspace: ws, JobID: "job/1", FirstMessage: 1, Messages: msgs(big, "c"),
		Audit: []approval.AuditRecord{{Seq: 1, CallID: "c1"}, {Seq: 2, CallID: "c2"}}}
	require.NoError(t, SaveSession(ctx, second))
	require.NoError(t, SaveSession(ctx, second))

	data, err := os.ReadFile(api.SessionFile(ws, "job/1"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[2], `"seq":3`)
	assert.Contains(t, lines[2], `"content":"c"`)
	recs, err := ReadAudit(api.AuditFile(ws, "job/1"))
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, "c2", recs[1].CallID)
}

// A line torn by a crash mid-write is cut off and written again.
func TestSaveSessionRepairsTornLine(t *testing.T) {
	for _, tc := range []struct{ name, torn string }{
		{"after a complete line", "{\"seq\":1,\"role\":\"user\",\"content\":\"a\"}\n{\"seq\":2,\"ro"},
		{"only a torn line", "{\"seq\":1,\"ro"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			require.NoError(t, os.MkdirAll(ws+"/.custos/sessions", 0o755))
			require.NoError(t, os.WriteFile(api.SessionFile(ws, "j"), []byte(tc.torn), 0o644))
			require.NoError(t, SaveSession(context.Background(), api.SaveSessionRequest{Workspace: ws, JobID: "j", Messages: msgs("a", "b")}))
			data, err := os.ReadFile(api.SessionFile(ws, "j"))
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			require.Len(t, lines, 2, string(data))
			assert.Contains(t, lines[0], `"seq":1`)
			assert.Contains(t, lines[1], `"seq":2`)
			assert.Contains(t, lines[1], `"content":"b"`)
		})
	}
}
