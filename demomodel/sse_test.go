package demomodel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collected is a streamed answer put back together the way a client must:
// content appended, tool calls by index, arguments appended.
type collected struct {
	role, content string
	calls         []openai.ToolCall
	finish        openai.FinishReason
	usage         *openai.Usage
	chunks        int
	maxArgPieces  int
}

func collect(t *testing.T, stream *openai.ChatCompletionStream) collected {
	t.Helper()
	var c collected
	pieces := map[int]int{}
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return c
		}
		require.NoError(t, err)
		c.chunks++
		assert.Equal(t, "chat.completion.chunk", r.Object)
		if r.Usage != nil {
			c.usage = r.Usage
		}
		for _, ch := range r.Choices {
			c.role += ch.Delta.Role
			c.content += ch.Delta.Content
			if ch.FinishReason != "" {
				c.finish = ch.FinishReason
			}
			for _, tc := range ch.Delta.ToolCalls {
				require.NotNil(t, tc.Index, "a streamed tool call is keyed by its index")
				for len(c.calls) <= *tc.Index {
					c.calls = append(c.calls, openai.ToolCall{})
				}
				call := &c.calls[*tc.Index]
				call.ID += tc.ID
				call.Type += tc.Type
				call.Function.Name += tc.Function.Name
				call.Function.Arguments += tc.Function.Arguments
				if tc.Function.Arguments != "" {
					pieces[*tc.Index]++
					c.maxArgPieces = max(c.maxArgPieces, pieces[*tc.Index])
				}
			}
		}
	}
}

func TestStream(t *testing.T) {
	tests := []struct {
		name         string
		reply        Reply
		includeUsage bool
		wantFinish   openai.FinishReason
	}{
		{name: "text", reply: Say("The tests pass: 42 of 42, in 3.1 s."), wantFinish: openai.FinishReasonStop},
		{name: "text with usage", reply: Say("Done."), includeUsage: true, wantFinish: openai.FinishReasonStop},
		{name: "multi-byte text cut between characters", reply: Reply{Message: openai.ChatCompletionMessage{Content: "héllo wörld — ✓ 日本語"}, ChunkSize: 2}, wantFinish: openai.FinishReasonStop},
		{name: "several tool calls, arguments in pieces", reply: Calls(
			ToolCall("", "Bash", map[string]any{"command": "go test ./... && go vet ./..."}),
			ToolCall("read-1", "Read", `{"file_path":"go.mod"}`),
		), includeUsage: true, wantFinish: openai.FinishReasonToolCalls},
		{name: "text and a call", reply: Reply{Message: openai.ChatCompletionMessage{Content: "Let me look.",
			ToolCalls: []openai.ToolCall{ToolCall("", "Glob", `{"pattern":"**/*.go"}`)}}}, wantFinish: openai.FinishReasonToolCalls},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The same reply, plain and streamed: the streamed one must
			// put back together into the plain one.
			_, c := start(t, Script(tc.reply, tc.reply))
			ctx := context.Background()
			plain, err := c.CreateChatCompletion(ctx, userRequest("hi"))
			require.NoError(t, err)
			req := userRequest("hi")
			if tc.includeUsage {
				req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
			}
			stream, err := c.CreateChatCompletionStream(ctx, req)
			require.NoError(t, err)
			defer stream.Close()
			got := collect(t, stream)

			want := plain.Choices[0].Message
			assert.Equal(t, want.Role, got.role)
			assert.Equal(t, want.Content, got.content)
			assert.Equal(t, tc.wantFinish, got.finish)
			require.Len(t, got.calls, len(want.ToolCalls))
			for i := range want.ToolCalls {
				assert.Equal(t, want.ToolCalls[i].Function, got.calls[i].Function)
				assert.Equal(t, want.ToolCalls[i].Type, got.calls[i].Type)
				assert.NotEmpty(t, got.calls[i].ID)
			}
			if len(want.ToolCalls) > 0 {
				assert.Greater(t, got.maxArgPieces, 1, "arguments come in several deltas")
			}
			if want.Content != "" {
				assert.Greater(t, got.chunks, 3, "content comes in several deltas")
			}
			if tc.includeUsage {
				require.NotNil(t, got.usage, "stream_options.include_usage asks for a usage chunk")
				assert.Positive(t, got.usage.TotalTokens)
			} else {
				assert.Nil(t, got.usage)
			}
		})
	}
}

// The wire itself: an event-stream of data lines ending with [DONE].
func TestStreamWire(t *testing.T) {
	s, _ := start(t, Script(Say("hello there")))
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		require.True(t, strings.HasPrefix(line, "data: "), "line %q", line)
		data = append(data, strings.TrimPrefix(line, "data: "))
	}
	require.NotEmpty(t, data)
	assert.Equal(t, "[DONE]", data[len(data)-1])
	assert.Contains(t, data[0], `"object":"chat.completion.chunk"`)
}

// Errors and garbage are answered to a stream request as to any other.
func TestStreamErrors(t *testing.T) {
	_, c := start(t, Script(Fail(http.StatusTooManyRequests, "slow down"), Garbage("<html>proxy</html>")))
	req := userRequest("hi")
	_, err := c.CreateChatCompletionStream(context.Background(), req)
	var apiErr *openai.APIError
	require.True(t, errors.As(err, &apiErr), "got %T %v", err, err)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.HTTPStatusCode)

	stream, err := c.CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err, "a 200 is a stream until its body says otherwise")
	defer stream.Close()
	_, err = stream.Recv()
	require.ErrorIs(t, err, io.EOF, "go-openai sees no data lines at all")
}

func TestPieces(t *testing.T) {
	tests := []struct {
		in   string
		size int
		want []string
	}{
		{"", 4, nil},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"héllo", 2, []string{"h", "é", "ll", "o"}},
		{"日本", 1, []string{"日", "本"}},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, pieces(tc.in, tc.size), "%q/%d", tc.in, tc.size)
	}
}
