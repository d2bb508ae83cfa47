package demomodel

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// writeStream sends resp as OpenAI streams it: server-sent events of
// chat.completion.chunk objects, then "data: [DONE]". Called with s.mu
// held unless the server is concurrent, so a slow stream holds up the next
// request like a busy endpoint.
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, req openai.ChatCompletionRequest, resp openai.ChatCompletionResponse, reply Reply) {
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	chunks := StreamChunks(resp, cmp.Or(reply.ChunkSize, defaultChunkSize(resp.Choices[0].Message)), includeUsage)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	flush()
	// Chunk i is due at a fixed time from the start, so the timers'
	// lateness does not add up over a long answer. The role chunk and the
	// first token come together, at FirstDelay.
	start := time.Now()
	for i, c := range chunks {
		due := start.Add(reply.FirstDelay + time.Duration(max(i-1, 0))*reply.ChunkDelay)
		if !pause(r, time.Until(due)) {
			return
		}
		b, err := json.Marshal(c)
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		flush()
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	flush()
}

// defaultChunkSize is 8 bytes, or larger for a long message so that it
// comes in a few hundred deltas at most (a test's 3 MB answer too).
func defaultChunkSize(msg openai.ChatCompletionMessage) int {
	n := max(len(msg.Content), len(msg.ReasoningContent))
	for _, tc := range msg.ToolCalls {
		n = max(n, len(tc.Function.Arguments))
	}
	return max(8, n/256)
}

// pause waits d unless the client goes away first (then false).
func pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// StreamChunks cuts a completion into the chunks an OpenAI endpoint streams:
// the role, the reasoning (reasoning_content) and then the content in pieces of at most size bytes, each tool call
// keyed by its index (its ID and name first, then its arguments in
// pieces), a chunk with the finish reason and, with includeUsage, one with
// no choices and the usage.
func StreamChunks(resp openai.ChatCompletionResponse, size int, includeUsage bool) []openai.ChatCompletionStreamResponse {
	var out []openai.ChatCompletionStreamResponse
	add := func(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) {
		out = append(out, openai.ChatCompletionStreamResponse{
			ID: resp.ID, Object: "chat.completion.chunk", Created: resp.Created, Model: resp.Model,
			Choices: []openai.ChatCompletionStreamChoice{{Index: 0, Delta: d, FinishReason: finish}},
		})
	}
	msg := resp.Choices[0].Message
	add(openai.ChatCompletionStreamChoiceDelta{Role: msg.Role}, "")
	for _, p := range pieces(msg.ReasoningContent, size) {
		// As DeepSeek, vLLM and llama.cpp stream a model's reasoning:
		// reasoning_content deltas before the content's.
		add(openai.ChatCompletionStreamChoiceDelta{ReasoningContent: p}, "")
	}
	for _, p := range pieces(msg.Content, size) {
		add(openai.ChatCompletionStreamChoiceDelta{Content: p}, "")
	}
	for i, tc := range msg.ToolCalls {
		add(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{
			Index: &i, ID: tc.ID, Type: tc.Type, Function: openai.FunctionCall{Name: tc.Function.Name},
		}}}, "")
		for _, p := range pieces(tc.Function.Arguments, size) {
			add(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{
				Index: &i, Function: openai.FunctionCall{Arguments: p},
			}}}, "")
		}
	}
	add(openai.ChatCompletionStreamChoiceDelta{}, resp.Choices[0].FinishReason)
	if includeUsage {
		u := resp.Usage
		out = append(out, openai.ChatCompletionStreamResponse{
			ID: resp.ID, Object: "chat.completion.chunk", Created: resp.Created, Model: resp.Model,
			Choices: []openai.ChatCompletionStreamChoice{}, Usage: &u,
		})
	}
	return out
}

// pieces cuts s into pieces of at most size bytes (one character when a
// character is longer), between characters.
func pieces(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 {
			_, n = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
