package demomodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// start runs a server on a loopback port and returns it with a go-openai client.
func start(t *testing.T, h Handler) (*Server, *openai.Client) {
	t.Helper()
	s := New(h)
	base, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.True(t, strings.HasSuffix(base, "/v1"), base)
	cfg := openai.DefaultConfig("sk-test-not-checked")
	cfg.BaseURL = base
	return s, openai.NewClientWithConfig(cfg)
}

func userRequest(text string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}},
	}
}

func TestToolCallsRoundTrip(t *testing.T) {
	s, c := start(t, Script(
		Calls(
			ToolCall("", "Bash", map[string]any{"command": "go test ./..."}),
			ToolCall("read-1", "Read", `{"file_path":"go.mod"}`),
			ToolCall("", "Glob", json.RawMessage(`{"pattern":"**/*.go"}`)),
		),
		Say("all good"),
	))
	ctx := context.Background()

	req := userRequest("run the tests")
	req.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: "Bash", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`),
	}}}
	resp, err := c.CreateChatCompletion(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "chatcmpl-1", resp.ID)
	assert.Equal(t, "gpt-test", resp.Model)
	require.Len(t, resp.Choices, 1)
	ch := resp.Choices[0]
	assert.Equal(t, openai.FinishReasonToolCalls, ch.FinishReason)
	assert.Equal(t, openai.ChatMessageRoleAssistant, ch.Message.Role)
	require.Len(t, ch.Message.ToolCalls, 3)
	// Missing ids are filled from a counter; given ones are kept.
	assert.Equal(t, []string{"call_1", "read-1", "call_2"},
		[]string{ch.Message.ToolCalls[0].ID, ch.Message.ToolCalls[1].ID, ch.Message.ToolCalls[2].ID})
	assert.Equal(t, openai.ToolTypeFunction, ch.Message.ToolCalls[0].Type)
	assert.Equal(t, "Bash", ch.Message.ToolCalls[0].Function.Name)
	assert.JSONEq(t, `{"command":"go test ./..."}`, ch.Message.ToolCalls[0].Function.Arguments)
	assert.JSONEq(t, `{"file_path":"go.mod"}`, ch.Message.ToolCalls[1].Function.Arguments)
	assert.JSONEq(t, `{"pattern":"**/*.go"}`, ch.Message.ToolCalls[2].Function.Arguments)
	assert.Positive(t, resp.Usage.PromptTokens)
	assert.Equal(t, resp.Usage.PromptTokens+resp.Usage.CompletionTokens, resp.Usage.TotalTokens)

	// Send the results back, as an agent loop does.
	req.Messages = append(req.Messages, ch.Message)
	for _, tc := range ch.Message.ToolCalls {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{
			Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: "ok " + tc.Function.Name,
		})
	}
	resp, err = c.CreateChatCompletion(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "chatcmpl-2", resp.ID)
	assert.Equal(t, "all good", resp.Choices[0].Message.Content)
	assert.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.Len(t, reqs[0].Messages, 1)
	assert.Equal(t, "Bash", reqs[0].Tools[0].Function.Name)
	require.Len(t, reqs[1].Messages, 5)
	assert.Equal(t, "read-1", reqs[1].Messages[3].ToolCallID)
	assert.Equal(t, "ok Read", reqs[1].Messages[3].Content)
	assert.Equal(t, "call_1", reqs[1].Messages[1].ToolCalls[0].ID)
}

func TestErrorStatuses(t *testing.T) {
	tests := []struct {
		name       string
		reply      Reply
		handlerErr error
		status     int
		message    string
		apiError   bool // an OpenAI-shaped body decodes to *openai.APIError
	}{
		{name: "rate limited", reply: Fail(429, "slow down"), status: 429, message: "slow down", apiError: true},
		{name: "server error", reply: Fail(500, "upstream broke"), status: 500, message: "upstream broke", apiError: true},
		{name: "bad request", reply: Fail(400, "context too long"), status: 400, message: "context too long", apiError: true},
		{name: "unauthorized", reply: Fail(401, "bad key"), status: 401, message: "bad key", apiError: true},
		{name: "raw body", reply: Reply{Status: 503, Body: "<html>gateway down</html>"}, status: 503, message: "gateway down"},
		{name: "handler error", handlerErr: errors.New("handler exploded"), status: 500, message: "handler exploded", apiError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := start(t, func(openai.ChatCompletionRequest) (Reply, error) { return tt.reply, tt.handlerErr })
			_, err := c.CreateChatCompletion(context.Background(), userRequest("hi"))
			require.Error(t, err)
			if tt.apiError {
				var apiErr *openai.APIError
				require.True(t, errors.As(err, &apiErr), "want *openai.APIError, got %T: %v", err, err)
				assert.Equal(t, tt.status, apiErr.HTTPStatusCode)
				assert.Equal(t, tt.message, apiErr.Message)
				return
			}
			var reqErr *openai.RequestError
			require.True(t, errors.As(err, &reqErr), "want *openai.RequestError, got %T: %v", err, err)
			assert.Equal(t, tt.status, reqErr.HTTPStatusCode)
			assert.Contains(t, string(reqErr.Body), tt.message)
		})
	}
}

func TestScriptExhaustion(t *testing.T) {
	s, c := start(t, Script(Say("one"), Say("two")))
	ctx := context.Background()
	for _, want := range []string{"one", "two"} {
		resp, err := c.CreateChatCompletion(ctx, userRequest("next"))
		require.NoError(t, err)
		assert.Equal(t, want, resp.Choices[0].Message.Content)
	}
	for i := 0; i < 2; i++ {
		_, err := c.CreateChatCompletion(ctx, userRequest("one too many"))
		var apiErr *openai.APIError
		require.True(t, errors.As(err, &apiErr), "got %v", err)
		assert.Equal(t, http.StatusInternalServerError, apiErr.HTTPStatusCode)
		assert.Contains(t, apiErr.Message, "script exhausted")
		assert.Contains(t, apiErr.Message, "only 2 replies were scripted")
	}
	assert.Len(t, s.Requests(), 4, "exhausted requests are recorded too")
}

func TestBadRequests(t *testing.T) {
	s, _ := start(t, Script(Say("unused")))
	base := s.BaseURL()

	tests := []struct {
		name, method, path, body string
		status                   int
		message                  string
	}{
		{"not JSON", "POST", "/chat/completions", "{nope", 400, "not a chat completion request"},
		{"no messages", "POST", "/chat/completions", `{"model":"m","messages":[]}`, 400, "messages must not be empty"},
		{"unknown path", "GET", "/embeddings", "", 404, "not GET /v1/embeddings"},
		{"wrong method", "GET", "/chat/completions", "", 404, "not GET /v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			var body struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			assert.Contains(t, body.Error.Message, tt.message)
		})
	}
	assert.Empty(t, s.Requests(), "rejected requests never reach the handler")
}

func TestModels(t *testing.T) {
	_, c := start(t, Script())
	models, err := c.ListModels(context.Background())
	require.NoError(t, err)
	require.Len(t, models.Models, 1)
	assert.Equal(t, ModelID, models.Models[0].ID)
}

func TestConcurrentRequests(t *testing.T) {
	const n = 8
	replies := make([]Reply, n)
	for i := range replies {
		replies[i] = Calls(ToolCall("", "Read", map[string]int{"n": i}))
	}
	s, c := start(t, Script(replies...))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids, callIDs := map[string]bool{}, map[string]bool{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.CreateChatCompletion(context.Background(), userRequest(fmt.Sprint("req ", i)))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[resp.ID] = true
			callIDs[resp.Choices[0].Message.ToolCalls[0].ID] = true
		}()
	}
	wg.Wait()
	assert.Len(t, ids, n, "completion ids are unique")
	assert.Len(t, callIDs, n, "tool call ids are unique")
	assert.Len(t, s.Requests(), n)
}

func TestLifecycle(t *testing.T) {
	s := New(Script())
	s.Close() // before Start: harmless
	s = New(Script(Say("x")))
	base, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	_, err = s.Start("127.0.0.1:0")
	assert.ErrorContains(t, err, "already started")
	s.Close()
	s.Close()
	_, err = http.Get(base + "/models")
	assert.Error(t, err, "closed server still answers")

	_, err = New(nil).Start("127.0.0.1:0")
	assert.ErrorContains(t, err, "nil handler")
	_, err = New(Script()).Start("not-an-address")
	assert.ErrorContains(t, err, "listen on not-an-address")
}

func TestToolCallHelper(t *testing.T) {
	tc := ToolCall("id", "Write", struct {
		Path string `json:"file_path"`
	}{"a.txt"})
	assert.Equal(t, `{"file_path":"a.txt"}`, tc.Function.Arguments)
	assert.PanicsWithValue(t, `demomodel.ToolCall("Bash"): arguments are not valid JSON: "{nope"`, func() { ToolCall("", "Bash", "{nope") })
	assert.Panics(t, func() { ToolCall("", "Bash", make(chan int)) })
}

// A concurrent server answers side by side: each of four requests is held
// in its Delay until all four have reached the handler, which a server
// answering one at a time never lets happen; the ids stay unique.
func TestConcurrentServerAnswersSideBySide(t *testing.T) {
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	s := NewConcurrent(func(req openai.ChatCompletionRequest) (Reply, error) {
		arrived.Done()
		select {
		case <-all:
			return Reply{Message: openai.ChatCompletionMessage{Content: "seen by all"}, Delay: 10 * time.Millisecond}, nil
		case <-time.After(30 * time.Second):
			return Fail(500, "the other requests never came while this one was answered"), nil
		}
	})
	base, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	cfg := openai.DefaultConfig("sk-test-not-checked")
	cfg.BaseURL = base
	c := openai.NewClientWithConfig(cfg)
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := userRequest(fmt.Sprint("req ", i))
			req.Stream = i%2 == 1
			if !req.Stream {
				resp, err := c.CreateChatCompletion(context.Background(), req)
				if assert.NoError(t, err) {
					ids[i] = resp.ID
					assert.Equal(t, "seen by all", resp.Choices[0].Message.Content)
				}
				return
			}
			st, err := c.CreateChatCompletionStream(context.Background(), req)
			if !assert.NoError(t, err) {
				return
			}
			defer st.Close()
			chunk, err := st.Recv()
			if assert.NoError(t, err) {
				ids[i] = chunk.ID
			}
		}()
	}
	wg.Wait()
	assert.Len(t, s.Requests(), n)
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	assert.Len(t, seen, n, "completion ids are unique")
}

// A reply's Delay holds the answer back, and a request that goes away ends
// it (the handler's next request is not held up on a serial server).
func TestReplyDelayEndsWithTheRequest(t *testing.T) {
	_, c := start(t, Script(Reply{Message: openai.ChatCompletionMessage{Content: "late"}, Delay: time.Hour}, Say("next")))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.CreateChatCompletion(ctx, userRequest("slow"))
	require.Error(t, err)
	resp, err := c.CreateChatCompletion(context.Background(), userRequest("then"))
	require.NoError(t, err)
	assert.Equal(t, "next", resp.Choices[0].Message.Content)
}
