package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/stream"
)

// jobRequest is a job's first model call, its conversation in ws.
func jobRequest(ws string) api.ModelRequest {
	return api.ModelRequest{WithTools: true, Conversation: &api.Conversation{Workspace: ws, JobID: "job1", FirstSeq: 1, Total: 2,
		Append: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: "s"}, {Role: openai.ChatMessageRoleUser, Content: "task"}}}}
}

// runChat runs m.Chat as an activity and returns its response or error.
func runChat(t testing.TB, m *Model, req api.ModelRequest) (api.ModelResponse, error) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(m.Chat)
	val, err := env.ExecuteActivity(m.Chat, req)
	if err != nil {
		return api.ModelResponse{}, err
	}
	var resp api.ModelResponse
	require.NoError(t, val.Get(&resp))
	return resp, nil
}

// Streaming changes how the answer travels, not what it is: the same
// reply, asked plainly and streamed, gives the same response.
func TestChatStreamMatchesPlain(t *testing.T) {
	long := strings.Repeat("All 42 tests pass; héllo wörld ✓. ", 20)
	tests := []struct {
		name  string
		reply demomodel.Reply
	}{
		{name: "text", reply: demomodel.Say(long)},
		{name: "one delta", reply: demomodel.Reply{Message: openai.ChatCompletionMessage{Content: "ok"}, ChunkSize: 100}},
		{name: "several calls, arguments across chunks", reply: demomodel.Calls(
			demomodel.ToolCall("c1", "Bash", map[string]any{"command": "go test ./... && go vet ./..."}),
			demomodel.ToolCall("c2", "Read", `{"file_path":"go.mod"}`),
			demomodel.ToolCall("c3", "Glob", `{"pattern":"**/*_test.go"}`),
		)},
		{name: "text and calls", reply: demomodel.Reply{Message: openai.ChatCompletionMessage{Content: "Let me look first.",
			ToolCalls: []openai.ToolCall{demomodel.ToolCall("c1", "Read", `{"file_path":"README.md"}`)}}}},
		{name: "reasoning, then text", reply: demomodel.Reply{Message: openai.ChatCompletionMessage{
			ReasoningContent: "The user wants the tests. Check go.mod first, then run them.", Content: "All tests pass."}}},
		{name: "usage and finish reason as sent", reply: demomodel.Reply{Message: openai.ChatCompletionMessage{Content: long},
			Usage: openai.Usage{PromptTokens: 1000, CompletionTokens: 200, TotalTokens: 1200}, FinishReason: "length"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := demomodel.New(demomodel.Script(tc.reply, tc.reply))
			base, err := srv.Start("127.0.0.1:0")
			require.NoError(t, err)
			defer srv.Close()

			plain := New(base, "k", "m", nil)
			want, err := runChat(t, plain, jobRequest(t.TempDir()))
			require.NoError(t, err)

			hub := stream.NewHub(stream.Limits{})
			sub := hub.Subscribe("job1")
			defer sub.Close()
			streamed := New(base, "k", "m", nil)
			streamed.Stream = hub
			got, err := runChat(t, streamed, jobRequest(t.TempDir()))
			require.NoError(t, err)
			require.Equal(t, want, got)

			reqs := srv.Requests()
			require.False(t, reqs[0].Stream)
			require.True(t, reqs[1].Stream)
			require.True(t, reqs[1].StreamOptions.IncludeUsage)

			// The watcher saw the reasoning, then the content, in pieces,
			// then the end.
			var text, thought strings.Builder
			cs := sub.Take()
			for _, c := range cs {
				if c.Thought {
					require.Empty(t, text.String(), "reasoning after text")
					thought.WriteString(c.Text)
					continue
				}
				text.WriteString(c.Text)
			}
			require.Equal(t, want.Message.Content, text.String())
			require.Equal(t, tc.reply.Message.ReasoningContent, thought.String())
			require.Equal(t, tc.reply.Message.ReasoningContent, got.Message.ReasoningContent, "the answer keeps its reasoning as a plain answer does")
			require.True(t, cs[len(cs)-1].Done)
			require.False(t, cs[len(cs)-1].Failed)
		})
	}
}

// errorClass is how Temporal and the workflow treat a model error.
func errorClass(err error) string {
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		return "ok"
	case !errors.As(err, &appErr):
		return fmt.Sprintf("not an application error: %T", err)
	case !appErr.NonRetryable():
		return "retryable"
	}
	return appErr.Type()
}

// A stream request that gets an error or garbage fails as the plain
// request does, so the workflow waits, retries or compacts the same way.
func TestChatStreamErrorsAsPlain(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"401 bad key", `{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}`, 401, api.ModelRefusedErrorType},
		{"404 unknown model", `{"error":{"message":"model not found","type":"invalid_request_error"}}`, 404, api.ModelRefusedErrorType},
		{"429 rate limited", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, 429, "retryable"},
		{"429 quota", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, 429, api.ModelRefusedErrorType},
		{"500", `{"error":{"message":"internal","type":"server_error"}}`, 500, "retryable"},
		{"503 HTML", `<html>upstream down</html>`, 503, "retryable"},
		{"400 context length", `{"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`, 400, api.ContextLengthErrorType},
		{"422", `{"error":{"message":"bad","type":"invalid_request_error"}}`, 422, api.ModelRequestErrorType},
		{"200 HTML", `<html>proxy login</html>`, 200, api.ModelGarbageErrorType},
		{"200 truncated JSON", `{"id":`, 200, api.ModelGarbageErrorType},
		{"200 no choices", `{"id":"x","object":"chat.completion","choices":[],"usage":{}}`, 200, api.ModelGarbageErrorType},
		{"200 empty", ``, 200, api.ModelGarbageErrorType},
		{"200 empty message", `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":""}}]}`, 200, api.ModelGarbageErrorType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{status: tc.status, body: tc.body}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			plain := New(srv.URL+"/v1", "k", "m", srv.Client())
			_, plainErr := runChat(t, plain, jobRequest(t.TempDir()))
			streamed := New(srv.URL+"/v1", "k", "m", srv.Client())
			streamed.Stream = stream.NewHub(stream.Limits{})
			_, streamErr := runChat(t, streamed, jobRequest(t.TempDir()))
			require.Equal(t, tc.want, errorClass(plainErr), "plain: %v", plainErr)
			require.Equal(t, tc.want, errorClass(streamErr), "streamed: %v", streamErr)
			if tc.status == 200 && strings.HasPrefix(tc.body, `{"id":"x"`) {
				// A job says once per distinct error why it waits: the
				// same answer must give the same words.
				require.Equal(t, plainErr.Error(), streamErr.Error())
			}
			require.Equal(t, int32(2), fake.calls.Load(), "one HTTP call each: no retry below Temporal")
		})
	}
}

// Bodies only a stream request can get wrong.
func TestChatStreamGarbage(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"a plain completion to a stream request is taken", `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`, "ok"},
		{"a stream cut before its end", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n", api.ModelGarbageErrorType},
		{"a chunk that is not JSON", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {nope\n\n", api.ModelGarbageErrorType},
		{"an error event mid-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", "retryable"},
		{"a stream that ends well", "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeOpenAI{status: 200, body: tc.body})
			defer srv.Close()
			m := New(srv.URL+"/v1", "k", "m", srv.Client())
			m.Stream = stream.NewHub(stream.Limits{})
			_, err := runChat(t, m, jobRequest(t.TempDir()))
			require.Equal(t, tc.want, errorClass(err), "%v", err)
		})
	}
}

// The same call asked again (an activity retry, or the workflow's after
// garbage) shows as a restart, not as the text a second time.
func TestChatStreamRestart(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		const first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n"
		if n.Add(1) == 1 {
			_, _ = w.Write([]byte(first)) // and the connection ends
			return
		}
		_, _ = w.Write([]byte(first + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	hub := stream.NewHub(stream.Limits{})
	sub := hub.Subscribe("job1")
	defer sub.Close()
	m := New(srv.URL+"/v1", "k", "m", srv.Client())
	m.Stream = hub
	ws := t.TempDir()
	_, err := runChat(t, m, jobRequest(ws))
	require.Equal(t, api.ModelGarbageErrorType, errorClass(err))
	resp, err := runChat(t, m, jobRequest(ws))
	require.NoError(t, err)
	require.Equal(t, "Hello", resp.Message.Content)
	var seen []string
	for _, c := range sub.Take() {
		switch {
		case c.Restart:
			seen = append(seen, "restart")
		case c.Done:
			seen = append(seen, fmt.Sprintf("done(failed=%v)", c.Failed))
		default:
			seen = append(seen, c.Text)
		}
	}
	require.Equal(t, []string{"Hel", "done(failed=true)", "restart", "Hello", "done(failed=false)"}, seen)
}

// An endpoint that answers stream: true with an ordinary completion is
// read by what it sent, whatever its size: a 3 MB answer (one line, or
// pretty-printed over thousands of lines) with Content-Type
// application/json, with none at all, or with a proxy's own, is the
// answer the same request without streaming gets, and its text reaches
// whoever watches the job.
func TestChatStreamTakesALargePlainCompletion(t *testing.T) {
	content := strings.Repeat("All 42 tests pass; héllo wörld ✓.\n", 3<<20/36)
	answer := openai.ChatCompletionResponse{ID: "chatcmpl-big", Object: "chat.completion", Created: 1, Model: "m",
		Choices: []openai.ChatCompletionChoice{{Index: 0, FinishReason: "stop", Message: openai.ChatCompletionMessage{
			Role: "assistant", Content: content, ToolCalls: []openai.ToolCall{demomodel.ToolCall("c1", "Read", `{"file_path":"go.mod"}`)}}}},
		Usage: openai.Usage{PromptTokens: 10, CompletionTokens: 700000, TotalTokens: 700010}}
	oneLine, err := json.Marshal(answer)
	require.NoError(t, err)
	pretty, err := json.MarshalIndent(answer, "", "  ")
	require.NoError(t, err)
	require.Greater(t, len(oneLine), 3<<20)
	for _, tc := range []struct {
		name, contentType string
		body              []byte
	}{
		{"application/json", "application/json", oneLine},
		{"application/json with a charset, pretty-printed", "application/json; charset=utf-8", append([]byte("\n  "), pretty...)},
		{"no Content-Type", "", oneLine},
		{"a proxy's text/plain", "text/plain", oneLine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var streamed atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if strings.Contains(string(b), `"stream":true`) {
					streamed.Add(1)
				}
				if tc.contentType == "" {
					w.Header()["Content-Type"] = nil // and no sniffing by net/http
				} else {
					w.Header().Set("Content-Type", tc.contentType)
				}
				_, _ = w.Write(tc.body)
			}))
			defer srv.Close()
			ws := t.TempDir()
			want, err := runChat(t, New(srv.URL+"/v1", "k", "m", srv.Client()), jobRequest(ws))
			require.NoError(t, err)
			require.Zero(t, streamed.Load())
			hub := stream.NewHub(stream.Limits{MaxText: 8 << 20, MaxPending: 8 << 20})
			sub := hub.Subscribe("job1")
			defer sub.Close()
			m := New(srv.URL+"/v1", "k", "m", srv.Client())
			m.Stream = hub
			got, err := runChat(t, m, jobRequest(ws))
			require.NoError(t, err, "the streamed request")
			require.Equal(t, int32(1), streamed.Load(), "the request asked for a stream")
			require.Equal(t, want, got)
			require.Equal(t, answer.Usage, got.Usage)
			require.Len(t, got.Message.ToolCalls, 1)
			var text strings.Builder
			done := false
			for _, c := range sub.Take() {
				text.WriteString(c.Text)
				done = done || c.Done && !c.Failed
			}
			require.True(t, done, "the stream ended well")
			require.True(t, text.String() == content, "the watchers saw the answer's text (%d of %d bytes)", text.Len(), len(content))
		})
	}
}

// A body its Content-Type calls a stream is read as one, even when it
// holds a completion: what the endpoint said it sent decides.
func TestChatStreamEventStreamIsAStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer srv.Close()
	m := New(srv.URL+"/v1", "k", "m", srv.Client())
	m.Stream = stream.NewHub(stream.Limits{})
	_, err := runChat(t, m, jobRequest(t.TempDir()))
	require.Equal(t, api.ModelGarbageErrorType, errorClass(err), "%v", err)
	require.ErrorContains(t, err, "not a chat completion stream")
}
