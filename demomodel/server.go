// Package demomodel is custos' offline model: a real HTTP server speaking the
// OpenAI chat completions protocol (plain and, for `stream: true`, as
// server-sent events) that answers from a script.
// The demo script (demo.go) drives the quick start when no API key is set;
// tests give it their own scripts. Point any OpenAI client at the base URL
// Start returns; replies come from a Handler.
package demomodel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Handler answers one chat completion request. An error becomes a 500 with the
// error's text as the OpenAI error message.
type Handler func(req openai.ChatCompletionRequest) (Reply, error)

// Reply is one answer of the fake model.
type Reply struct {
	// Status is the HTTP status; 0 means 200. Any other status sends Body.
	Status int
	// Body is the raw response body when Status is not 200 (see Fail for an
	// OpenAI-shaped error body); with status 200, a non-empty Body is sent
	// as it is instead of a completion (see Garbage).
	Body string
	// Message is the assistant message when Status is 0 or 200. Role defaults to
	// "assistant"; tool calls without an ID get a deterministic one.
	Message openai.ChatCompletionMessage
	// Usage is reported as is; when zero a rough estimate is sent, so code that
	// accounts tokens sees non-zero numbers.
	Usage openai.Usage
	// FinishReason defaults to "tool_calls" when Message has tool calls and to
	// "stop" otherwise.
	FinishReason string
	// ChunkSize is, for a streamed answer, how many bytes of text (content
	// or a call's arguments) one delta carries at most (0: 8, more for a
	// text over 2 KiB, so it takes at most about 256 deltas), cut between
	// characters, never inside one.
	ChunkSize int
	// ChunkDelay is, for a streamed answer, the time between chunks (the
	// endpoint's time between tokens); FirstDelay the time before the
	// first (its time to first token).
	ChunkDelay, FirstDelay time.Duration
	// Delay is the time the server thinks before it answers at all (a
	// plain answer, a stream's headers or an error), however the request
	// asked; the request going away ends it.
	Delay time.Duration
}

// ModelID is the model GET /v1/models lists.
const ModelID = "custos-fake"

// Server is the fake OpenAI endpoint. Requests are answered one at a time, in
// arrival order, so Requests()[i] is the request that got the i-th reply;
// one made with NewConcurrent answers several at once, as a real endpoint
// does.
type Server struct {
	handler Handler
	// concurrent calls the handler, waits out the reply's delays and
	// streams without holding mu: the handler must be safe for concurrent
	// use (Script is).
	concurrent bool

	mu       sync.Mutex // guards everything below and serialises handler calls
	requests []openai.ChatCompletionRequest
	nextID   int
	nextCall int
	srv      *http.Server
	baseURL  string
	closed   bool
	// contextLimit, when set, refuses prompts over it as OpenAI does;
	// overLimit counts them.
	contextLimit, overLimit int
}

// SetContextLimit makes the server refuse, with HTTP 400 and code
// context_length_exceeded, any request whose prompt is over tokens (counted
// as PromptTokens does), and count those requests (OverLimit).
func (s *Server) SetContextLimit(tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contextLimit = tokens
}

// OverLimit is how many requests were over the context limit.
func (s *Server) OverLimit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overLimit
}

// PromptTokens counts a request's prompt the way this server does (and
// roughly as real endpoints do): four bytes a token of the messages as sent.
func PromptTokens(req openai.ChatCompletionRequest) int {
	in, _ := json.Marshal(req.Messages)
	return len(in)/4 + 1
}

// ContextLengthExceeded is the answer OpenAI gives a prompt over the window.
func ContextLengthExceeded(limit, got int) Reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.", limit, got),
		"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
	}})
	return Reply{Status: http.StatusBadRequest, Body: string(b)}
}

// New returns a server that answers with handler. It listens once Start is
// called.
func New(handler Handler) *Server {
	return &Server{handler: handler}
}

// NewConcurrent returns a server that answers requests side by side: the
// handler is called for each as it comes, without waiting for the answer
// before it, so each reply's Delay, FirstDelay and ChunkDelay are its own
// (a model endpoint serving several conversations). Requests() is in
// arrival order; the handler must be safe for concurrent use.
func NewConcurrent(handler Handler) *Server {
	return &Server{handler: handler, concurrent: true}
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves in the
// background. It returns the base URL to give an OpenAI client, ending in "/v1".
func (s *Server) Start(addr string) (string, error) {
	if s.handler == nil {
		return "", errors.New("demomodel: nil handler")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", errors.New("demomodel: server already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("demomodel: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("demomodel serves POST /v1/chat/completions and GET /v1/models, not %s %s", r.Method, r.URL.Path))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.baseURL = "http://" + ln.Addr().String() + "/v1"
	go func() { _ = s.srv.Serve(ln) }()
	return s.baseURL, nil
}

// BaseURL is the URL Start returned ("" before Start).
func (s *Server) BaseURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseURL
}

// Close stops the server and drops open connections. It is safe to call more
// than once and before Start.
func (s *Server) Close() {
	s.mu.Lock()
	srv := s.srv
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if srv == nil || already {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}

// Requests returns a copy of every chat completion request received, in order.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.requests...)
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("demomodel: request body is not a chat completion request: %v", err))
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "demomodel: messages must not be empty")
		return
	}

	s.mu.Lock()
	s.requests = append(s.requests, req)
	if n := PromptTokens(req); s.contextLimit > 0 && n > s.contextLimit {
		s.overLimit++
		s.mu.Unlock()
		r := ContextLengthExceeded(s.contextLimit, n)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(r.Status)
		_, _ = w.Write([]byte(r.Body))
		return
	}
	concurrent := s.concurrent
	if concurrent {
		s.mu.Unlock()
	} else {
		defer s.mu.Unlock()
	}
	reply, err := s.handler(req)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !pause(r, reply.Delay) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK || reply.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(cmp.Or(reply.Status, http.StatusOK))
		_, _ = w.Write([]byte(reply.Body))
		return
	}
	if concurrent {
		s.mu.Lock()
	}
	resp := s.completion(req, reply)
	if concurrent {
		s.mu.Unlock()
	}
	if req.Stream {
		s.writeStream(w, r, req, resp, reply)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// completion is the whole answer to req, streamed or not. Called with s.mu
// held, so ids follow the order of the answers.
func (s *Server) completion(req openai.ChatCompletionRequest, reply Reply) openai.ChatCompletionResponse {
	s.nextID++
	msg := reply.Message
	if msg.Role == "" {
		msg.Role = openai.ChatMessageRoleAssistant
	}
	msg.ToolCalls = append([]openai.ToolCall(nil), msg.ToolCalls...)
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].ID == "" {
			s.nextCall++
			msg.ToolCalls[i].ID = fmt.Sprintf("call_%d", s.nextCall)
		}
		if msg.ToolCalls[i].Type == "" {
			msg.ToolCalls[i].Type = openai.ToolTypeFunction
		}
	}
	finish := openai.FinishReason(reply.FinishReason)
	if finish == "" {
		finish = openai.FinishReasonStop
		if len(msg.ToolCalls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
	}
	usage := reply.Usage
	if usage == (openai.Usage{}) {
		usage = estimateUsage(req, msg)
	}
	model := req.Model
	if model == "" {
		model = ModelID
	}
	return openai.ChatCompletionResponse{
		ID:      fmt.Sprintf("chatcmpl-%d", s.nextID),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   usage,
	}
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   []map[string]any{{"id": ModelID, "object": "model", "created": 0, "owned_by": "custos-demo"}},
	})
}

// estimateUsage counts roughly four characters per token.
func estimateUsage(req openai.ChatCompletionRequest, msg openai.ChatCompletionMessage) openai.Usage {
	out, _ := json.Marshal(msg)
	u := openai.Usage{PromptTokens: PromptTokens(req), CompletionTokens: len(out)/4 + 1}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(errorBody(status, msg)))
}

// errorBody is the body OpenAI sends for an error, which go-openai decodes into
// an *openai.APIError.
func errorBody(status int, msg string) string {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil,
	}})
	return string(b)
}
