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

// say to a job the server has forgotten continues it from its transcript on
// its host, given the workspace: the model sees the old conversation.
func TestSayToAJobTheServerForgot(t *testing.T) {
	const task = "cli test: a job from long ago"
	model := &recorded{next: demomodel.Script(demomodel.Say("REVIVED answer"))}
	c := jobEnv(t, task, model.handle)
	ws := testenv.Workspace(t)
	id := "custos-revived-from-files"
	files := api.JobFilesIn(statedir.WorkspaceDirIn(testenv.StateDir(), ws), id)
	require.NoError(t, activities.SaveSession(context.Background(), api.SaveSessionRequest{
		Workspace: ws, JobID: id, Files: files,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "system"},
			{Role: openai.ChatMessageRoleUser, Content: task},
			{Role: openai.ChatMessageRoleAssistant, Content: "the OLD answer"},
		},
		Audit: []approval.AuditRecord{{Seq: 1, Time: time.Now(), JobID: id, Event: "sandbox"}},
	}))

	code, out, errOut := runApp(t, context.Background(), "say", "--workspace", ws, id, "and one more thing")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "job "+id+" had ended; it goes on in "+ws+" from its transcript")
	assert.Contains(t, out, "REVIVED answer")
	require.Equal(t, 1, model.count())
	assert.Equal(t, []string{task, "and one more thing"}, model.turns(0, openai.ChatMessageRoleUser))
	assert.Equal(t, []string{"the OLD answer"}, model.turns(0, openai.ChatMessageRoleAssistant))
	recs := testenv.Audit(t, c, id)
	require.NotEmpty(t, recs)
	assert.Greater(t, recs[0].Seq, 1, "the audit goes on after the records the file holds")
}
