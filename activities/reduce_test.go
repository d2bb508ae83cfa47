package activities

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/hooks"
)

// chatOnce answers one request of a job's conversation with body, through
// a real HTTP server, and returns the reduced response.
func chatOnce(t *testing.T, ws, body string) api.ModelResponse {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	m := NewModel(srv.URL+"/v1", "k", "m", srv.Client())
	env.RegisterActivity(m.Chat)
	conv := &api.Conversation{Workspace: ws, JobID: "job1", FirstSeq: 1, Total: 2, Append: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "s"}, {Role: openai.ChatMessageRoleUser, Content: "task"}}}
	val, err := env.ExecuteActivity(m.Chat, api.ModelRequest{Conversation: conv})
	require.NoError(t, err)
	var resp api.ModelResponse
	require.NoError(t, val.Get(&resp))
	return resp
}

func completion(t *testing.T, finish string, msg openai.ChatCompletionMessage) string {
	t.Helper()
	b, err := json.Marshal(openai.ChatCompletionResponse{ID: "x", Object: "chat.completion",
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: openai.FinishReason(finish)}}})
	require.NoError(t, err)
	return string(b)
}

// A Write of 1 MiB comes back with its content as a blob marker; the Write
// activity reads the blob back and writes the whole content, and a blob
// whose bytes no longer match its hash is refused.
func TestModelStoresLargeContentAsBlob(t *testing.T) {
	ws := t.TempDir()
	content := strings.Repeat("x", 1<<20)
	args, _ := json.Marshal(map[string]string{"file_path": "a.txt", "content": content})
	resp := chatOnce(t, ws, completion(t, "tool_calls", openai.ChatCompletionMessage{Role: "assistant",
		ToolCalls: []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "Write", Arguments: string(args)}}}}))
	reduced := resp.Message.ToolCalls[0].Function.Arguments
	assert.Less(t, len(reduced), 300)
	assert.Contains(t, reduced, `"file_path":"a.txt"`)
	assert.Contains(t, reduced, "[custos-blob sha256:")

	res, err := (&Tools{}).Write(t.Context(), api.ToolRequest{JobID: "job1", Workspace: ws, Input: json.RawMessage(reduced)})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Output)
	got, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, content, string(got))

	entries, err := os.ReadDir(api.BlobDirOf(api.JobFiles{}, ws, "job1"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.NoError(t, os.WriteFile(filepath.Join(api.BlobDirOf(api.JobFiles{}, ws, "job1"), entries[0].Name()), []byte(strings.Repeat("y", 1<<20)), 0o600))
	res, err = (&Tools{}).Write(t.Context(), api.ToolRequest{JobID: "job1", Workspace: ws, Input: json.RawMessage(reduced)})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "damaged")
}

// A Bash command over the inline cap is refused with the reason; a call
// cut at the length limit is refused with how much of it arrived.
func TestModelRefusesCallsThatCannotTravel(t *testing.T) {
	ws := t.TempDir()
	cmd, _ := json.Marshal(map[string]string{"command": "echo " + strings.Repeat("a", 40<<10)})
	resp := chatOnce(t, ws, completion(t, "tool_calls", openai.ChatCompletionMessage{Role: "assistant",
		ToolCalls: []openai.ToolCall{{ID: "b1", Type: "function", Function: openai.FunctionCall{Name: "Bash", Arguments: string(cmd)}}}}))
	why, ok := api.RefusedReason(json.RawMessage(resp.Message.ToolCalls[0].Function.Arguments))
	require.True(t, ok)
	assert.Contains(t, why, "Write a script to a file")

	resp = chatOnce(t, ws, completion(t, "length", openai.ChatCompletionMessage{Role: "assistant",
		ToolCalls: []openai.ToolCall{{ID: "w1", Type: "function", Function: openai.FunctionCall{Name: "Write", Arguments: `{"file_path":"a","content":"ab`}}}}))
	why, ok = api.RefusedReason(json.RawMessage(resp.Message.ToolCalls[0].Function.Arguments))
	require.True(t, ok)
	assert.Contains(t, why, "call w1 (Write) had 30 bytes of arguments when it was cut")
}

// A large text answer keeps its head in the message; the model's next
// request gets it whole from the blob.
func TestModelTextAnswerRoundTrip(t *testing.T) {
	ws := t.TempDir()
	text := strings.Repeat("word ", 20000)
	resp := chatOnce(t, ws, completion(t, "stop", openai.ChatCompletionMessage{Role: "assistant", Content: text}))
	assert.Less(t, len(resp.Message.Content), api.TextHeadInline+300)
	bs := toolkit.Blobs{Dir: api.BlobDirOf(api.JobFiles{}, ws, "job1")}
	whole, err := bs.ExpandText(resp.Message.Content)
	require.NoError(t, err)
	assert.Equal(t, text, whole)
}

// A hook judges the whole call: the content kept out of history as a blob
// is read back into the payload it gets on stdin.
func TestHooksGetTheWholeContent(t *testing.T) {
	ws := t.TempDir()
	content := strings.Repeat("secret-free text\n", 4000)
	sum, err := toolkit.Blobs{Dir: api.BlobDirOf(api.JobFiles{}, ws, "job1")}.Put(content)
	require.NoError(t, err)
	in, _ := json.Marshal(map[string]string{"file_path": "a.txt", "content": api.BlobMarker(sum, len(content))})
	seen := filepath.Join(t.TempDir(), "stdin.json")
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions((&Hooks{}).RunHooks, activity.RegisterOptions{Name: api.HooksActivity})
	_, err = env.ExecuteActivity(api.HooksActivity, api.HookRequest{Dir: ws,
		Hooks:   []hooks.CommandHook{{Name: "keep", Command: "cat > " + seen, Timeout: 10 * time.Second, Point: hooks.ToolApprovalPre}},
		Payload: hooks.Payload{Point: hooks.ToolApprovalPre, JobID: "job1", Workspace: ws, Tool: "Write", Input: in}})
	require.NoError(t, err)
	b, err := os.ReadFile(seen)
	require.NoError(t, err)
	var p hooks.Payload
	require.NoError(t, json.Unmarshal(b, &p))
	var args map[string]string
	require.NoError(t, json.Unmarshal(p.Input, &args))
	assert.Equal(t, content, args["content"])
}

// An input a hook rewrites stays small in history: its large content is a
// blob again.
func TestHookRewrittenInputIsReduced(t *testing.T) {
	ws := t.TempDir()
	content := strings.Repeat("z", 100<<10)
	out, _ := json.Marshal(map[string]any{"modifiedInput": map[string]string{"file_path": "a.txt", "content": content}})
	answer := filepath.Join(t.TempDir(), "answer.json")
	require.NoError(t, os.WriteFile(answer, out, 0o600))
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions((&Hooks{}).RunHooks, activity.RegisterOptions{Name: api.HooksActivity})
	val, err := env.ExecuteActivity(api.HooksActivity, api.HookRequest{Dir: ws,
		Hooks: []hooks.CommandHook{{Name: "rewrite", Command: "cat " + answer, Timeout: 10 * time.Second, Point: hooks.ToolApprovalPre}},
		Payload: hooks.Payload{Point: hooks.ToolApprovalPre, JobID: "job1", Workspace: ws, Tool: "Write",
			Input: json.RawMessage(`{"file_path":"a.txt","content":"x"}`)}})
	require.NoError(t, err)
	var resp api.HookResponse
	require.NoError(t, val.Get(&resp))
	require.Less(t, len(resp.Result.ModifiedInput), 300)
	full, err := toolkit.ExpandInput(toolkit.JobBlobs("", ws, "job1"), resp.Result.ModifiedInput)
	require.NoError(t, err)
	var args map[string]string
	require.NoError(t, json.Unmarshal(full, &args))
	assert.Equal(t, content, args["content"])
}

// An Edit whose strings are blobs is previewed and run with the whole
// strings.
func TestEditAndPreviewReadBlobs(t *testing.T) {
	ws := t.TempDir()
	oldS, newS := strings.Repeat("old line\n", 2000), strings.Repeat("new line\n", 2000)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "f.txt"), []byte("head\n"+oldS+"tail\n"), 0o644))
	bs := toolkit.Blobs{Dir: api.BlobDirOf(api.JobFiles{}, ws, "job1")}
	so, err := bs.Put(oldS)
	require.NoError(t, err)
	sn, err := bs.Put(newS)
	require.NoError(t, err)
	in, _ := json.Marshal(map[string]string{"file_path": "f.txt", "old_string": api.BlobMarker(so, len(oldS)), "new_string": api.BlobMarker(sn, len(newS))})
	req := api.ToolRequest{JobID: "job1", Workspace: ws, Input: in}
	prev, err := (&Tools{}).Preview(t.Context(), api.PreviewRequest{Tool: "Edit", Call: req})
	require.NoError(t, err)
	assert.Empty(t, prev.Failed)
	assert.Contains(t, prev.Diff, "@@ -1,2002 +1,2002 @@", "the whole strings are diffed")
	res, err := (&Tools{}).Edit(t.Context(), req)
	require.NoError(t, err)
	require.False(t, res.IsError, res.Output)
	got, err := os.ReadFile(filepath.Join(ws, "f.txt"))
	require.NoError(t, err)
	assert.Equal(t, "head\n"+newS+"tail\n", string(got))
}

// A blob stored again (another job's answer of the same content) is
// marked fresh, so the state directory's collection keeps it.
func TestReusedBlobIsFresh(t *testing.T) {
	b := toolkit.Blobs{Dir: t.TempDir()}
	s := strings.Repeat("x", 10000)
	name, err := b.Put(s)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-90 * 24 * time.Hour)
	path := filepath.Join(b.Dir, name)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(s); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("reused blob's mtime = %v, %v; want now", fi.ModTime(), err)
	}
}
