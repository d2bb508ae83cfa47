package demomodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// Script answers the n-th request with the n-th reply. Once the replies are used
// up every further request gets a 500 "script exhausted" error: a test that
// makes more model calls than it scripted should fail loudly, not loop on a
// canned answer. Safe for concurrent use.
func Script(replies ...Reply) Handler {
	var mu sync.Mutex
	next := 0
	return func(openai.ChatCompletionRequest) (Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(replies) {
			next++
			return Fail(http.StatusInternalServerError,
				fmt.Sprintf("demomodel: script exhausted: request %d, but only %d replies were scripted", next, len(replies))), nil
		}
		r := replies[next]
		next++
		return r, nil
	}
}

// ToolCall builds a function tool call. args is marshalled to JSON; a string or
// json.RawMessage is taken as the JSON text itself. An empty id lets the server
// assign one. It panics if args cannot be marshalled or a string is not valid
// JSON, like regexp.MustCompile: it is for scripting tests.
func ToolCall(id, name string, args any) openai.ToolCall {
	var text string
	switch a := args.(type) {
	case string:
		text = a
	case json.RawMessage:
		text = string(a)
	default:
		b, err := json.Marshal(args)
		if err != nil {
			panic(fmt.Sprintf("demomodel.ToolCall(%q): arguments do not marshal to JSON: %v", name, err))
		}
		text = string(b)
	}
	if !json.Valid([]byte(text)) {
		panic(fmt.Sprintf("demomodel.ToolCall(%q): arguments are not valid JSON: %q", name, text))
	}
	return openai.ToolCall{
		ID:       id,
		Type:     openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: name, Arguments: text},
	}
}

// Say is a plain-text assistant answer.
func Say(text string) Reply {
	return Reply{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: text}}
}

// Calls is an assistant answer that calls tools.
func Calls(calls ...openai.ToolCall) Reply {
	return Reply{
		Message:      openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: calls},
		FinishReason: string(openai.FinishReasonToolCalls),
	}
}

// Garbage is a 200 whose body is sent as it is: a proxy's HTML page, a
// truncated or empty body, JSON that is not a completion.
func Garbage(body string) Reply {
	return Reply{Status: http.StatusOK, Body: body}
}

// Fail is an error answer with an OpenAI-shaped body, which go-openai returns as
// an *openai.APIError carrying status.
func Fail(status int, msg string) Reply {
	return Reply{Status: status, Body: errorBody(status, msg)}
}
