package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/jobevents"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// kinds are the updates in order, one letter a chunk: t a thought, a the
// agent's text, u the user's; with the thoughts' and the answers' text.
func kinds(ups []acp.SessionNotification) (order, thought, agent string) {
	var o, th, ag strings.Builder
	for _, n := range ups {
		u := n.Update
		switch {
		case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
			o.WriteByte('t')
			th.WriteString(u.AgentThoughtChunk.Content.Text.Text)
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			o.WriteByte('a')
			ag.WriteString(u.AgentMessageChunk.Content.Text.Text)
		case u.UserMessageChunk != nil:
			o.WriteByte('u')
		}
	}
	return o.String(), th.String(), ag.String()
}

// An endpoint that streams reasoning_content (as DeepSeek, vLLM and
// llama.cpp do) is shown in the editor as agent_thought_chunk, live —
// relayed from the worker's stream, before the answer's
// agent_message_chunks — and again on session/load in a new process
// (from the job's transcript); the reasoning never enters the answer.
func TestACPReasoningAsThoughtChunks(t *testing.T) {
	reasoning := "The person asks why the sky is blue. Rayleigh scattering: say it in one line."
	answer := "Because air scatters blue light more than red."
	model := func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		msg := demomodel.Say(answer).Message
		msg.ReasoningContent = reasoning
		return demomodel.Reply{Message: msg, ChunkSize: 8, ChunkDelay: 5 * time.Millisecond}, nil
	}
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	_, base := testenv.StartModel(t, model)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hub := app.NewStreamHub(func(string) string { return "" })
	ss, err := app.StartStreamServer(ctx, hub, func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	testenv.StartWorkers(t, c, base, app.Options{Stream: hub, StreamServer: ss})
	env := append([]string{"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + testenv.StateDir()}, testenv.ModelEnv(base)...)
	env = append(env, tlsEnv(srv)...)

	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	ws := testenv.Workspace(t)
	sess, err := ed.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err)
	res, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("why is the sky blue?")}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	assert.Equal(t, acp.StopReasonEndTurn, res.StopReason)
	ups, _ := ed.seen()
	order, thought, agent := kinds(ups)
	assert.Equal(t, reasoning, thought, "the reasoning, whole, as agent_thought_chunk")
	assert.Equal(t, answer, agent, "the answer without the reasoning")
	require.Contains(t, order, "a")
	assert.Greater(t, strings.Count(order, "t"), 1, "the reasoning streamed in pieces: %s", order)
	assert.NotContains(t, order[strings.Index(order, "a"):], "t", "every thought chunk before the first message chunk: %s", order)

	ed.kill()
	ed2 := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	_, err = ed2.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: sess.SessionId, Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err, "stderr: %s", ed2.errb)
	ups, _ = ed2.seen()
	order, thought, agent = kinds(ups)
	assert.Equal(t, "uta", order, "the prompt, the reasoning, the answer")
	assert.Equal(t, reasoning, thought)
	assert.Equal(t, answer, agent)
}

// loadTurns is the number of turns of the session/load test and benchmark.
const loadTurns = 200

// turnsModel answers "turn N" with "re: turn N", reasoning about it
// first; every 25th turn calls Glob before it answers.
func turnsModel(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
	text := lastUser(req)
	var n int
	_, _ = fmt.Sscanf(text, "turn %d", &n)
	if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleUser && n%25 == 0 {
		return demomodel.Calls(demomodel.ToolCall(fmt.Sprintf("g%d", n), "Glob", map[string]any{"pattern": "*"})), nil
	}
	msg := demomodel.Say("re: " + text).Message
	msg.ReasoningContent = "thinking about " + text
	return demomodel.Reply{Message: msg}, nil
}

// longJob makes a job of loadTurns turns ("turn 0" its task) that
// continues as new every 40 turns, and returns its ID.
func longJob(t testing.TB, c client.Client, ws string) string {
	id := fmt.Sprintf("acp-load-%d", time.Now().UnixNano())
	testenv.StartJob(t, c, id, jobapi.JobInput{Task: "turn 0", Workspace: ws, ContextWindow: 100_000_000, ContinueAsNewEvery: 40})
	waitAnswer(t, c, id, "re: turn 0", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for i := 1; i < loadTurns; i++ {
		text := fmt.Sprintf("turn %d", i)
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: jobapi.MessageUpdate,
			Args: []any{jobapi.Message{Text: text, By: "e2e"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		var res jobapi.MessageResult
		require.NoError(t, h.Get(ctx, &res))
		waitAnswer(t, c, id, "re: "+text, time.Minute)
	}
	return id
}

// replayed is what a load replayed: each user message, agent message
// and thought chunk, each tool call's last status.
type replayed struct {
	users, agent, thoughts []string
	status                 map[string]acp.ToolCallStatus
}

func replayOf(ups []acp.SessionNotification) replayed {
	r := replayed{status: summarise(ups).status}
	for _, n := range ups {
		u := n.Update
		switch {
		case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
			r.users = append(r.users, u.UserMessageChunk.Content.Text.Text)
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			r.agent = append(r.agent, u.AgentMessageChunk.Content.Text.Text)
		case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
			r.thoughts = append(r.thoughts, u.AgentThoughtChunk.Content.Text.Text)
		}
	}
	return r
}

// A new `starter acp` process answers session/load of a job of 200 turns
// that continued as new several times with the whole conversation: every
// user turn once and in order, every answer and its reasoning, each
// call's final status; then a prompt goes on live, and is not replayed
// twice.
func TestACPLoadReplaysEveryTurnAcrossRuns(t *testing.T) {
	c, env := acpSetup(t, turnsModel)
	ws := testenv.Workspace(t)
	id := longJob(t, c, ws)
	st := queryACPStatus(t, c, id)
	require.GreaterOrEqual(t, st.Runs, 4, "the job continued as new")

	ed := startEditor(t, env, func(acp.RequestPermissionRequest) acp.PermissionOptionId { return "allow_once" })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := ed.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: ws, McpServers: []acp.McpServer{}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	ups, misused := ed.seen()
	assert.Empty(t, misused)
	r := replayOf(ups)
	var users, answers, thoughts []string
	for i := range loadTurns {
		users = append(users, fmt.Sprintf("turn %d", i))
		answers = append(answers, fmt.Sprintf("re: turn %d", i))
		thoughts = append(thoughts, fmt.Sprintf("thinking about turn %d", i))
		if i%25 == 0 {
			assert.Equal(t, acp.ToolCallStatusCompleted, r.status[fmt.Sprintf("g%d", i)], "call g%d", i)
		}
	}
	assert.Equal(t, users, r.users, "every user turn, once, in order")
	assert.Equal(t, answers, r.agent, "every answer, once, in order")
	assert.Equal(t, thoughts, r.thoughts, "every answer's reasoning, once, in order")

	res, err := ed.conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(id), Prompt: []acp.ContentBlock{acp.TextBlock(fmt.Sprintf("turn %d", loadTurns))}})
	require.NoError(t, err, "stderr: %s", ed.errb)
	assert.Equal(t, acp.StopReasonEndTurn, res.StopReason)
	ups, _ = ed.seen()
	agent := strings.Join(replayOf(ups).agent, "|")
	assert.Equal(t, 1, strings.Count(agent, fmt.Sprintf("re: turn %d", loadTurns)), "the live answer once")
	assert.Equal(t, 1, strings.Count(agent, "re: turn 199|"), "the replay is not given again")
	assert.True(t, jobevents.WaitsForMessage(queryACPStatus(t, c, id)))
}
