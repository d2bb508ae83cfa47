package demomodel

import (
	"context"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tool(name string, props ...string) openai.Tool {
	p := map[string]any{}
	for _, n := range props {
		p[n] = map[string]string{"type": "string"}
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: name, Parameters: map[string]any{"type": "object", "properties": p},
	}}
}

var claudeTools = []openai.Tool{
	tool("Glob", "pattern", "path"), tool("Read", "file_path", "offset"),
	tool("Write", "file_path", "content"), tool("Bash", "command", "timeout"),
}

const denied = `{"approved":false,"decision":"deny","layer":"human","reason":"the human said no"}`

// step is one expected demo answer and the tool result the "agent" sends back.
type step struct {
	tool   string            // expected tool; "" for the final answer
	args   map[string]string // expected arguments (subset)
	result string            // tool result to feed back
}

func TestDemoWalkthrough(t *testing.T) {
	tests := []struct {
		name        string
		tools       []openai.Tool
		steps       []step
		finalHas    []string
		finalHasNot []string
	}{
		{
			name:  "everything approved",
			tools: claudeTools,
			steps: []step{
				{tool: "Glob", args: map[string]string{"pattern": "**/*"}, result: "main.go\nREADME.md\ndocs/\n"},
				{tool: "Read", args: map[string]string{"file_path": "README.md"}, result: "     1\t# svc\n     2\tA service.\n"},
				{tool: "Write", args: map[string]string{"file_path": DemoNote}, result: "Wrote 12 lines to CUSTOS_DEMO.md"},
				{tool: "Bash", args: map[string]string{"command": DemoCommand}, result: "total 12\n12 CUSTOS_DEMO.md\n"},
				{},
			},
			finalHas: []string{"offline demo model", "Task: fix the failing test in ./svc", "found 2 files",
				"Write CUSTOS_DEMO.md: approved and written", "approved and run"},
			finalHasNot: []string{"denied"},
		},
		{
			name:  "write and command denied",
			tools: claudeTools,
			steps: []step{
				{tool: "Glob", result: "src/b.go\nsrc/a.go\n[2 of 9 matches shown, newest first; use a more specific pattern or path]\n"},
				// No README: the first listed file; the note line is skipped.
				{tool: "Read", args: map[string]string{"file_path": "src/b.go"}, result: "Error: Read: src/b.go does not exist"},
				{tool: "Write", result: denied},
				{tool: "Bash", result: `{"approved":false,"decision":"deny","layer":"rules","rule":"Bash(ls:*)","reason":"listing is forbidden"}`},
				{},
			},
			finalHas: []string{"Read src/b.go: approved, but it failed: Error: Read: src/b.go does not exist",
				"Write CUSTOS_DEMO.md: denied: the human said no", "denied: listing is forbidden"},
			finalHasNot: []string{"approved and written", "approved and run"},
		},
		{
			name:  "empty workspace skips the read",
			tools: claudeTools,
			steps: []step{
				{tool: "Glob", result: "No files found"},
				{tool: "Write", result: "ok"},
				{tool: "Bash", result: "ok"},
				{},
			},
			finalHas:    []string{"found 0 files"},
			finalHasNot: []string{"- Read"},
		},
		{
			name:  "argument names come from the schemas; missing tools are skipped",
			tools: []openai.Tool{tool("Glob", "glob"), tool("Read", "path"), tool("Write", "path", "text")},
			steps: []step{
				{tool: "Glob", args: map[string]string{"glob": "**/*"}, result: "docs/README.md\nx.txt\n"},
				{tool: "Read", args: map[string]string{"path": "docs/README.md"}, result: "hello"},
				{tool: "Write", args: map[string]string{"path": DemoNote}, result: "ok"},
				{},
			},
			finalHasNot: []string{"Bash"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := start(t, Demo())
			req := openai.ChatCompletionRequest{
				Model: "demo",
				Messages: []openai.ChatCompletionMessage{
					{Role: openai.ChatMessageRoleSystem, Content: "You are custos."},
					{Role: openai.ChatMessageRoleUser, Content: "fix the failing test in ./svc"},
				},
				Tools: tt.tools,
			}
			var final string
			for i, st := range tt.steps {
				resp, err := c.CreateChatCompletion(context.Background(), req)
				require.NoError(t, err)
				msg := resp.Choices[0].Message
				if st.tool == "" {
					require.Empty(t, msg.ToolCalls, "step %d: want the final answer", i)
					assert.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
					final = msg.Content
					break
				}
				require.Len(t, msg.ToolCalls, 1, "step %d: %s", i, msg.Content)
				tc := msg.ToolCalls[0]
				assert.Equal(t, st.tool, tc.Function.Name, "step %d", i)
				var args map[string]any
				require.NoError(t, json.Unmarshal([]byte(tc.Function.Arguments), &args))
				for k, v := range st.args {
					assert.Equal(t, v, args[k], "step %d argument %s in %s", i, k, tc.Function.Arguments)
				}
				if i == 0 {
					assert.Contains(t, msg.Content, "offline demo model")
				}
				req.Messages = append(req.Messages, msg, openai.ChatCompletionMessage{
					Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: st.result,
				})
			}
			require.NotEmpty(t, final)
			for _, s := range tt.finalHas {
				assert.Contains(t, final, s)
			}
			for _, s := range tt.finalHasNot {
				assert.NotContains(t, final, s)
			}
			assert.Len(t, srv.Requests(), len(tt.steps))
		})
	}
}

func TestDemoNoteContent(t *testing.T) {
	req := openai.ChatCompletionRequest{Tools: claudeTools, Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleUser, Content: "tidy the repo"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{ToolCall("g", "Glob", map[string]string{"pattern": "**/*"})}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "g", Content: "a.go\nREADME.md\n"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{ToolCall("r", "Read", map[string]string{"file_path": "README.md"})}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "r", Content: "     1\t# x\n     2\ty\n"},
	}}
	r, err := Demo()(req)
	require.NoError(t, err)
	require.Len(t, r.Message.ToolCalls, 1)
	var args struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Message.ToolCalls[0].Function.Arguments), &args))
	assert.Equal(t, DemoNote, args.FilePath)
	for _, s := range []string{"offline demo model", "## Task\n\ntidy the repo", "## Files seen (2)", "- a.go", "- README.md", "I read README.md (2 lines shown)"} {
		assert.Contains(t, args.Content, s)
	}
	// The call id is derived from the conversation (third assistant turn), so a
	// restarted server cannot hand out an id the conversation already uses.
	assert.Equal(t, "call_demo_3_write", r.Message.ToolCalls[0].ID)
}

func TestDemoIsStateless(t *testing.T) {
	h := Demo()
	conv := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleUser, Content: "first task"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{ToolCall("g", "Glob", map[string]string{"pattern": "**/*"})}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "g", Content: "a.go"},
	}}
	first, err := h(conv)
	require.NoError(t, err)
	// A fresh handler (a restarted worker) gives the same answer.
	again, err := Demo()(conv)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, "Read", first.Message.ToolCalls[0].Function.Name)

	// A follow-up user message starts the script over for the new task.
	conv.Messages = append(conv.Messages,
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "done"},
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "second task"}}},
	)
	next, err := h(conv)
	require.NoError(t, err)
	require.Len(t, next.Message.ToolCalls, 1)
	assert.Equal(t, "Glob", next.Message.ToolCalls[0].Function.Name)

	// No task at all: a clear answer, not a tool call.
	none, err := h(openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: "x"}}})
	require.NoError(t, err)
	assert.Empty(t, none.Message.ToolCalls)
	assert.Contains(t, none.Message.Content, "did not find a task")
}

// Only custos' structured denial is a denial: a Read of a file that quotes
// one is a read.
func TestIsDenial(t *testing.T) {
	for _, tc := range []struct {
		res    string
		denied bool
	}{
		{`{"approved":false,"decision":"deny","layer":"human","reason":"no"}`, true},
		{`{"approved": false, "reason": "no"}`, true},
		{`{"approved":true,"error":"job canceled before the call ran"}`, false},
		{"     1\tA refused call comes back as {\"approved\": false, …}\n", false},
		{`Error: Read: no such file`, false},
	} {
		if got, _ := isDenial(tc.res); got != tc.denied {
			t.Errorf("%q: denied = %v, want %v", tc.res, got, tc.denied)
		}
	}
}
