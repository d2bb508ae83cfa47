// Package model is the model call: the chat completion activity (streamed
// or not, its errors classified for Temporal's retries), the compaction
// of a conversation, and the reduction of large answers to blobs.
package model

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/activities/transcript"
	"github.com/custos-dev/custos/stream"
)

// Model is the chat completion activity, for any OpenAI-compatible endpoint.
type Model struct {
	Client *openai.Client
	// Model is the model name used when a request does not name one.
	Model string
	// Stream, when set, makes a job's model calls stream (stream: true)
	// and publishes the answer's text there as it arrives, for whoever
	// watches the job in this process. The response returned, and so
	// history, is the same as without.
	Stream *stream.Hub
	// Serve, when set, serves Stream's text to followers on other hosts:
	// the heartbeat says where (api.ModelProgress).
	Serve *stream.Server
	// Offer is the tools a request offers besides its own (custos' tools
	// and Task, as activities.NewModel sets it); nil: only the request's.
	Offer func(api.ModelRequest) []openai.Tool
}

// New builds the activity. baseURL "" means OpenAI's; httpClient nil
// means http.DefaultClient's behaviour. go-openai v1.43 has no retry loop of
// its own (its Client.sendRequest does one HTTP round trip), so every retry
// is Temporal's, visible in history and governed by the activity's retry
// policy. Do not pass an httpClient whose transport retries.
func New(baseURL, apiKey, model string, httpClient *http.Client) *Model {
	cfg := openai.DefaultConfig(apiKey)
	if baseURL != "" {
		cfg.BaseURL = baseURL
	}
	if httpClient != nil {
		cfg.HTTPClient = httpClient
	}
	cfg.HTTPClient = headKeeper{cfg.HTTPClient}
	return &Model{Client: openai.NewClientWithConfig(cfg), Model: model}
}

// Chat makes one chat completion call. Errors are classified for Temporal's
// retry policy: 408, 409, 429 (but an exhausted quota), 5xx and network
// errors are plain errors (retried with backoff); a refusal the operator
// can fix (401, 402, 403, 404, an exhausted quota) is a non-retryable
// api.ModelRefusedErrorType and an answer that is not a chat completion a
// non-retryable api.ModelGarbageErrorType, both retried by the workflow,
// which shows why it waits; any other 4xx is a non-retryable
// api.ModelRequestErrorType. A large answer is reduced (see api.BlobDir).
func (m *Model) Chat(ctx context.Context, req api.ModelRequest) (api.ModelResponse, error) {
	name := cmp.Or(req.Model, m.Model)
	msgs, err := m.messages(req)
	if err != nil {
		// A full state directory parks the job (DiskFull) rather than
		// spending the activity's retries.
		return api.ModelResponse{}, toolkit.ClassifyDiskFull(err)
	}
	var tools []openai.Tool
	if m.Offer != nil {
		tools = m.Offer(req)
	}
	tools = append(tools, req.Tools...)
	creq := openai.ChatCompletionRequest{Model: name, Messages: msgs, Tools: tools}
	if len(tools) > 0 {
		// The workflow runs independent calls in parallel; let the model
		// ask for several at once.
		creq.ParallelToolCalls = true
	}
	resp, err := m.complete(ctx, creq, req)
	if err != nil {
		return api.ModelResponse{}, observeModelError(ctx, classifyModelError(name, err))
	}
	if err := checkAnswer(name, resp); err != nil {
		return api.ModelResponse{}, observeModelError(ctx, err)
	}
	c := resp.Choices[0]
	out := api.ModelResponse{Message: c.Message, Usage: resp.Usage, FinishReason: string(c.FinishReason)}
	if req.Conversation != nil {
		if err := reduceAnswer(toolkit.ConversationBlobs(*req.Conversation), &out); err != nil {
			return api.ModelResponse{}, toolkit.ClassifyDiskFull(err)
		}
	}
	return out, nil
}

// complete asks the endpoint, streaming when a hub watches the job.
func (m *Model) complete(ctx context.Context, creq openai.ChatCompletionRequest, req api.ModelRequest) (openai.ChatCompletionResponse, error) {
	if m.Stream != nil && req.Conversation != nil && req.Conversation.JobID != "" {
		w := m.Stream.Begin(req.Conversation.JobID, req.Conversation.Total, int(toolkit.Attempt(ctx)))
		sctx, revoke := m.advertise(ctx, req.Conversation.JobID)
		resp, err := m.completeStream(sctx, creq, w)
		w.End(err != nil)
		revoke() // after the last chunk: its followers get it first
		return resp, err
	}
	// Heartbeat while the model thinks: a worker killed mid-call is then
	// noticed within the heartbeat timeout, and the call is retried on
	// another worker instead of waiting out the start-to-close timeout.
	stop := toolkit.HeartbeatEvery(ctx, 5*time.Second, func() any { return "waiting for the model" })
	defer stop()
	return m.Client.CreateChatCompletion(ctx, creq)
}

// messages is what the model is sent: the stored conversation under its
// view, with the blobs of earlier answers read back, or req.Messages.
func (m *Model) messages(req api.ModelRequest) ([]openai.ChatCompletionMessage, error) {
	if req.Conversation == nil {
		return req.Messages, nil
	}
	all, err := transcript.Load(*req.Conversation)
	if err != nil {
		return nil, err
	}
	msgs := req.Conversation.View.Visible(all)
	return expandMessages(toolkit.ConversationBlobs(*req.Conversation), msgs)
}

// checkAnswer refuses a 200 that is not an answer: no choices, or a
// message with neither text nor calls.
func checkAnswer(name string, resp openai.ChatCompletionResponse) error {
	if len(resp.Choices) == 0 {
		// No response ID in the text: the job says once per distinct
		// error why it waits.
		return garbage(fmt.Sprintf("model %s: the response has no choices", name))
	}
	msg := resp.Choices[0].Message
	if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) == 0 && len(msg.MultiContent) == 0 {
		return garbage(fmt.Sprintf("model %s: the answer is an empty message (finish_reason %q)", name, resp.Choices[0].FinishReason))
	}
	return nil
}

func garbage(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, api.ModelGarbageErrorType, nil)
}

// classifyModelError turns a go-openai error into a retryable or a
// non-retryable one.
func classifyModelError(model string, err error) error {
	status := 0
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	wrapped := fmt.Errorf("model %s: %w", model, err)
	switch {
	case status == http.StatusBadRequest && contextLengthExceeded(apiErr):
		return temporal.NewNonRetryableApplicationError(wrapped.Error(), api.ContextLengthErrorType, err)
	case status == 0 && notAnAnswer(err):
		return garbage(fmt.Sprintf("model %s: the response is not a chat completion: %v", model, err))
	case operatorCanFix(status, apiErr):
		code := ""
		if apiErr != nil {
			code, _ = apiErr.Code.(string)
		}
		return temporal.NewNonRetryableApplicationError(wrapped.Error(), api.ModelRefusedErrorType, err,
			api.ModelFailure{Status: status, Code: code, Model: model})
	case retryableStatus(status):
		return wrapped
	}
	return temporal.NewNonRetryableApplicationError(wrapped.Error(), api.ModelRequestErrorType, err)
}

// notAnAnswer: a body that was read but does not decode (no HTTP or
// network error, which are transient the usual way).
func notAnAnswer(err error) bool {
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &te) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, errNotAStream) || errors.Is(err, openai.ErrTooManyEmptyStreamMessages)
}

// operatorCanFix: refusals that stay until someone changes the key, the
// model name, the account's quota or billing.
func operatorCanFix(status int, e *openai.APIError) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusPaymentRequired, http.StatusForbidden, http.StatusNotFound:
		return true
	case http.StatusTooManyRequests:
		return quotaExhausted(e)
	}
	return false
}

// quotaExhausted tells an exhausted quota or billing limit (OpenAI's 429
// insufficient_quota) from a rate limit, which passes by itself.
func quotaExhausted(e *openai.APIError) bool {
	if e == nil {
		return false
	}
	code, _ := e.Code.(string)
	if code == "insufficient_quota" || e.Type == "insufficient_quota" {
		return true
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "quota") || strings.Contains(m, "billing")
}

// retryableStatus: 0 is "no HTTP answer" (network error, timeout), worth
// retrying like the transient statuses.
func retryableStatus(status int) bool {
	switch {
	case status == 0:
		return true
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests:
		return true
	case status >= 500:
		return true
	case status >= 400:
		return false
	}
	return true
}

// contextLengthExceeded recognises the error OpenAI and compatible servers
// send for a prompt over the context window.
func contextLengthExceeded(e *openai.APIError) bool {
	if e == nil {
		return false
	}
	if code, ok := e.Code.(string); ok && code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "context_length_exceeded") || strings.Contains(m, "maximum context length")
}
