package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
)

// Model is the chat completion activity, for any OpenAI-compatible endpoint.
type Model struct {
	Client *openai.Client
	// Model is the model name used when a request does not name one.
	Model string
}

// NewModel builds the activity. baseURL "" means OpenAI's; httpClient nil
// means http.DefaultClient's behaviour. go-openai v1.43 has no retry loop of
// its own (its Client.sendRequest does one HTTP round trip), so every retry
// is Temporal's, visible in history and governed by the activity's retry
// policy. Do not pass an httpClient whose transport retries.
func NewModel(baseURL, apiKey, model string, httpClient *http.Client) *Model {
	cfg := openai.DefaultConfig(apiKey)
	if baseURL != "" {
		cfg.BaseURL = baseURL
	}
	if httpClient != nil {
		cfg.HTTPClient = httpClient
	}
	return &Model{Client: openai.NewClientWithConfig(cfg), Model: model}
}

// Chat makes one chat completion call. Errors are classified for Temporal's
// retry policy: 408, 409, 429, 5xx, network errors, unreadable responses and
// empty answers are plain errors (retried with backoff); any other 4xx is a
// non-retryable application error of type api.ModelRequestErrorType.
func (m *Model) Chat(ctx context.Context, req api.ModelRequest) (api.ModelResponse, error) {
	name := req.Model
	if name == "" {
		name = m.Model
	}
	msgs := req.Messages
	if req.Conversation != nil {
		all, err := loadConversation(*req.Conversation)
		if err != nil {
			return api.ModelResponse{}, err
		}
		msgs = req.Conversation.View.Visible(all)
	}
	tools := req.Tools
	if req.WithTools {
		tools = append(ToolDefinitions(), tools...)
	}
	creq := openai.ChatCompletionRequest{
		Model:    name,
		Messages: msgs,
		Tools:    tools,
	}
	if len(tools) > 0 {
		// The workflow runs independent calls in parallel; let the model
		// ask for several at once.
		creq.ParallelToolCalls = true
	}
	// Heartbeat while the model thinks: a worker killed mid-call is then
	// noticed within the heartbeat timeout, and the call is retried on
	// another worker instead of waiting out the start-to-close timeout.
	stop := heartbeatEvery(ctx, 5*time.Second, func() any { return "waiting for the model" })
	resp, err := m.Client.CreateChatCompletion(ctx, creq)
	stop()
	if err != nil {
		return api.ModelResponse{}, classifyModelError(name, err)
	}
	if len(resp.Choices) == 0 {
		return api.ModelResponse{}, fmt.Errorf("model %s: response has no choices (id %q)", name, resp.ID)
	}
	c := resp.Choices[0]
	return api.ModelResponse{
		Message:      c.Message,
		Usage:        resp.Usage,
		FinishReason: string(c.FinishReason),
	}, nil
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
	if status == http.StatusBadRequest && contextLengthExceeded(apiErr) {
		return temporal.NewNonRetryableApplicationError(wrapped.Error(), api.ContextLengthErrorType, err)
	}
	if retryableStatus(status) {
		return wrapped
	}
	return temporal.NewNonRetryableApplicationError(wrapped.Error(), api.ModelRequestErrorType, err)
}

// retryableStatus: 0 is "no HTTP answer" (network error, timeout, malformed
// body), worth retrying like the transient statuses.
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
