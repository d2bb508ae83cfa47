package cli_test

import (
	"context"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/activities"
	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/statedir"
	"github.com/custos-dev/custos/internal/testenv"
)

// A job the server has forgotten (past its retention) still has its files
// on its host: status and audit read them.
func TestStatusAndAuditFromFilesOnceTheServerForgot(t *testing.T) {
	jobEnv(t, "cli test: a forgotten job", demomodel.Script())
	ws := testenv.Workspace(t)
	state, err := statedir.Dir()
	require.NoError(t, err)
	id := "custos-long-forgotten"
	files := api.JobFilesIn(statedir.WorkspaceDirIn(state, ws), id)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, activities.SaveSession(context.Background(), api.SaveSessionRequest{
		Workspace: ws, JobID: id, Files: files,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "system"},
			{Role: openai.ChatMessageRoleUser, Content: "the task"},
			{Role: openai.ChatMessageRoleAssistant, Content: "the ANSWER from long ago"},
		},
		Audit: []approval.AuditRecord{
			{Seq: 1, Time: at, JobID: id, Event: "sandbox", Env: &approval.Env{Workspace: ws}},
			{Seq: 2, Time: at, JobID: id, CallID: "w1", Tool: "Write", Decision: approval.Allow, Layer: approval.LayerHuman, Approver: "alice"},
		},
	}))

	code, out, errOut := runApp(t, context.Background(), "status", id)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"state:     ended; the server no longer has it",
		"workspace: " + ws,
		"audit:     2 records",
		"messages:  3 in the transcript",
		"answer:    the ANSWER from long ago",
		"starter say --workspace DIR " + id,
	} {
		assert.Contains(t, out, want)
	}
	code, out, errOut = runApp(t, context.Background(), "audit", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "w1")
	assert.Contains(t, out, "alice")

	code, _, errOut = runApp(t, context.Background(), "status", "custos-never-was")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no files of it on this host")
}
