package workflows

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/mcpservers"
)

// A job started without a task (an editor's session/new) asks the model
// nothing: it waits for its first message, which is the conversation's
// first user turn.
func TestJobWithoutTaskWaitsForItsFirstMessage(t *testing.T) {
	h := conversing(newHarness(t, demomodel.Script(demomodel.Say("hello to you"))))
	h.input.Task = ""
	var waiting Status
	h.env.RegisterDelayedCallback(func() { waiting = h.status() }, time.Minute)
	msg := h.updateAt(2*time.Minute, MessageUpdate, Message{Text: "hello", By: "alice", Channel: "acp"})
	var after Status
	h.env.RegisterDelayedCallback(func() { after = h.status() }, 3*time.Minute)
	h.updateAt(4*time.Minute, EndUpdate, End{By: "alice", Channel: "acp"})

	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, PhaseWaitingMessage, waiting.State, "before any message the job waits for one")
	assert.Equal(t, "", waiting.Task)
	assert.Equal(t, 0, waiting.Turn)
	assert.Equal(t, 1, waiting.Messages, "no message has come")
	assert.Equal(t, waiting.WaitingSince.Add(DefaultIdleLimit), waiting.IdleUntil, "the idle limit runs from the start")
	require.NoError(t, msg.err)
	assert.Equal(t, "next", msg.message.Delivery)
	require.Len(t, h.oai.Requests(), 1, "the model is asked once, for the message")
	assert.Equal(t, []string{"hello"}, h.userTurns(0), "the first message is the first user turn, no empty task before it")
	assert.Equal(t, "hello to you", after.LastAnswer)
	assert.Equal(t, "ended", res.Reason)
}

// A job that never gets its first message ends at its idle limit, as an
// idle conversation does, without asking the model.
func TestJobWithoutTaskEndsAtItsIdleLimit(t *testing.T) {
	h := conversing(newHarness(t, demomodel.Script()))
	h.input.Task, h.input.IdleLimit = "", 3*time.Hour
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "idle", res.Reason)
	assert.Empty(t, h.oai.Requests())
	assert.Len(t, h.auditEventsOf("idle-ended"), 1)
}

// An editor's servers whose entries this host does not have are named in
// the job's notes, not dropped silently; the entries a job has are
// removed when it ends.
func TestEditorServersNotedAndForgottenAtTheEnd(t *testing.T) {
	h := conversing(newHarness(t, demomodel.Script(demomodel.Say("done"))))
	h.input.Task, h.input.EditorServers, h.input.IdleLimit = "", []string{"ghost"}, time.Hour
	res, err := h.run()
	require.NoError(t, err)
	assert.Equal(t, "idle", res.Reason)
	var noted bool
	for _, r := range h.auditEventsOf("mcp") {
		noted = noted || strings.Contains(r.Reason, "the editor's MCP servers (ghost) are not used: their entries are not on this worker's host")
	}
	assert.True(t, noted, "the note names the server and why: %v", h.auditEventsOf("mcp"))

	h2 := conversing(newHarness(t, demomodel.Script(demomodel.Say("done"))))
	srv, err := mcpservers.EditorServer("job-ed", mcpservers.EditorEntry{Name: "ed", Command: "/bin/true", Env: map[string]string{"TOKEN": "s3cret"}})
	require.NoError(t, err)
	require.NoError(t, mcpservers.WriteEditorServers(h2.stateDir, "job-ed", []mcpservers.Server{srv}))
	h2.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "job-ed"})
	h2.input.Task, h2.input.EditorServers, h2.input.IdleLimit = "", []string{"ed"}, time.Hour
	_, err = h2.run()
	require.NoError(t, err)
	_, err = os.Stat(mcpservers.EditorFile(h2.stateDir, "job-ed"))
	assert.True(t, os.IsNotExist(err), "the entry file is removed when the job ends: %v", err)
}
