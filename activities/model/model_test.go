package model

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/custos-dev/custos/activities/api"
)

// fakeOpenAI is a real HTTP server speaking the chat completions protocol:
// it answers every request with the given status and body and keeps the
// last request body for inspection.
type fakeOpenAI struct {
	status int
	body   string
	calls  atomic.Int32
	last   atomic.Value // []byte
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"wrong endpoint","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	f.last.Store(b)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	_, _ = io.WriteString(w, f.body)
}

const toolCallResponse = `{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
  "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
    "role": "assistant", "content": "",
    "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"README.md\"}"}},
      {"id": "call_2", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"go test ./...\"}"}}
    ]}}],
  "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
}`

func TestModelChat(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		// wantErr: "" none, "retryable", "nonretryable", "context",
		// "refused" (the job parks until the operator fixes it),
		// "garbage" (the workflow retries it, visibly)
		wantErr string
	}{
		{name: "tool calls", status: 200, body: toolCallResponse},
		{name: "429 rate limited", status: 429, body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, wantErr: "retryable"},
		{name: "500 server error", status: 500, body: `{"error":{"message":"internal","type":"server_error"}}`, wantErr: "retryable"},
		{name: "503 non-JSON body", status: 503, body: `<html>upstream down</html>`, wantErr: "retryable"},
		{name: "408 timeout", status: 408, body: `{"error":{"message":"timeout","type":"timeout"}}`, wantErr: "retryable"},
		{name: "400 bad request", status: 400, body: `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","code":"invalid_value"}}`, wantErr: "nonretryable"},
		{name: "400 context length exceeded", status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`, wantErr: "context"},
		{name: "400 context length, message only", status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error"}}`, wantErr: "context"},
		{name: "401 bad key", status: 401, body: `{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}`, wantErr: "refused"},
		{name: "403 forbidden", status: 403, body: `{"error":{"message":"not allowed","type":"invalid_request_error"}}`, wantErr: "refused"},
		{name: "404 unknown model", status: 404, body: `{"error":{"message":"model not found","type":"invalid_request_error"}}`, wantErr: "refused"},
		{name: "402 payment required", status: 402, body: `{"error":{"message":"billing","type":"billing_error"}}`, wantErr: "refused"},
		{name: "429 insufficient quota", status: 429, body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, wantErr: "refused"},
		{name: "422 unprocessable", status: 422, body: `{"error":{"message":"bad","type":"invalid_request_error"}}`, wantErr: "nonretryable"},
		{name: "no choices", status: 200, body: `{"id":"x","object":"chat.completion","choices":[],"usage":{}}`, wantErr: "garbage"},
		{name: "malformed 200 body", status: 200, body: `{"id":`, wantErr: "garbage"},
		{name: "200 HTML body", status: 200, body: `<html>proxy login</html>`, wantErr: "garbage"},
		{name: "empty message", status: 200, body: `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":""}}]}`, wantErr: "garbage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{status: tc.status, body: tc.body}
			srv := httptest.NewServer(fake)
			defer srv.Close()

			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			m := New(srv.URL+"/v1", "test-key", "test-model", srv.Client())
			env.RegisterActivity(m.Chat)

			req := api.ModelRequest{
				Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "fix the test"}},
				Tools:    toolsNamed(api.ToolNames()),
			}
			val, err := env.ExecuteActivity(m.Chat, req)
			// Exactly one HTTP call: no retry loop below Temporal.
			require.Equal(t, int32(1), fake.calls.Load(), "the client must not retry by itself")

			switch tc.wantErr {
			case "":
				require.NoError(t, err)
				var resp api.ModelResponse
				require.NoError(t, val.Get(&resp))
				require.Equal(t, "tool_calls", resp.FinishReason)
				require.Len(t, resp.Message.ToolCalls, 2)
				require.Equal(t, "Read", resp.Message.ToolCalls[0].Function.Name)
				require.JSONEq(t, `{"file_path":"README.md"}`, resp.Message.ToolCalls[0].Function.Arguments)
				require.Equal(t, "call_2", resp.Message.ToolCalls[1].ID)
				require.Equal(t, 150, resp.Usage.TotalTokens)

				// What went over the wire: model, tools, parallel tool calls.
				var sent map[string]any
				require.NoError(t, json.Unmarshal(fake.last.Load().([]byte), &sent))
				require.Equal(t, "test-model", sent["model"])
				require.Equal(t, true, sent["parallel_tool_calls"])
				require.Len(t, sent["tools"], len(api.ToolNames()), "custos' own tools, each once")
			case "retryable":
				require.Error(t, err)
				// A plain error reaches Temporal as a retryable
				// application error of the Go error's type.
				var appErr *temporal.ApplicationError
				require.True(t, errors.As(err, &appErr), "got %T: %v", err, err)
				require.False(t, appErr.NonRetryable(), "must be retryable: %v", err)
				require.NotEqual(t, api.ModelRequestErrorType, appErr.Type())
			case "nonretryable":
				require.Error(t, err)
				var appErr *temporal.ApplicationError
				require.True(t, errors.As(err, &appErr), "want an application error, got %T: %v", err, err)
				require.True(t, appErr.NonRetryable())
				require.Equal(t, api.ModelRequestErrorType, appErr.Type())
				require.Contains(t, appErr.Error(), "test-model")
			case "refused", "garbage":
				var appErr *temporal.ApplicationError
				require.True(t, errors.As(err, &appErr), "want an application error, got %T: %v", err, err)
				require.True(t, appErr.NonRetryable(), "the workflow, not Temporal's retry, waits it out")
				want := map[string]string{"refused": api.ModelRefusedErrorType, "garbage": api.ModelGarbageErrorType}[tc.wantErr]
				require.Equal(t, want, appErr.Type())
				if tc.wantErr == "refused" {
					var f api.ModelFailure
					require.NoError(t, appErr.Details(&f))
					require.Equal(t, tc.status, f.Status)
					require.Equal(t, "test-model", f.Model)
				}
			case "context":
				var appErr *temporal.ApplicationError
				require.True(t, errors.As(err, &appErr), "want an application error, got %T: %v", err, err)
				require.True(t, appErr.NonRetryable(), "compaction, not a retry, fixes it")
				require.Equal(t, api.ContextLengthErrorType, appErr.Type())
			}
		})
	}
}

// A request naming a model overrides the worker's default, and a request
// without tools does not send parallel_tool_calls (some servers reject it).
func TestModelChatOverridesModelAndOmitsParallelWithoutTools(t *testing.T) {
	fake := &fakeOpenAI{status: 200, body: `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}],"usage":{"total_tokens":3}}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	m := New(srv.URL+"/v1", "k", "default-model", nil)
	env.RegisterActivity(m.Chat)
	val, err := env.ExecuteActivity(m.Chat, api.ModelRequest{
		Model:    "other-model",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}},
	})
	require.NoError(t, err)
	var resp api.ModelResponse
	require.NoError(t, val.Get(&resp))
	require.Equal(t, "done", resp.Message.Content)
	require.Equal(t, "stop", resp.FinishReason)
	var sent map[string]any
	require.NoError(t, json.Unmarshal(fake.last.Load().([]byte), &sent))
	require.Equal(t, "other-model", sent["model"])
	require.NotContains(t, sent, "parallel_tool_calls")
	require.NotContains(t, sent, "tools")
}

// A connection refused (no server) is a network error: retryable.
func TestModelChatNetworkErrorIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	m := New(url+"/v1", "k", "m", nil)
	env.RegisterActivity(m.Chat)
	_, err := env.ExecuteActivity(m.Chat, api.ModelRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}})
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "got %T: %v", err, err)
	require.False(t, appErr.NonRetryable(), "network errors must be retryable: %v", err)
	require.Contains(t, err.Error(), "connection refused")
}

// toolsNamed are function tools of those names, as a request offers them.
func toolsNamed(names []string) []openai.Tool {
	var out []openai.Tool
	for _, n := range names {
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: n, Parameters: json.RawMessage(`{"type":"object"}`)}})
	}
	return out
}
