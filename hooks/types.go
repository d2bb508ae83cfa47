// Package hooks holds custos' hook points, payloads and results, the handler
// registry (system hooks in Go, user hooks as commands) and the reading of a
// command hook's answer. It starts no process, so workflow code and the
// approval pipeline use it freely; hooks/command runs command hooks.
package hooks

import (
	"encoding/json"
)

// Point is a place in a job where hooks run.
type Point string

const (
	ToolExecuteBefore Point = "tool.execute.before"
	ToolExecuteAfter  Point = "tool.execute.after"
	ToolExecuteError  Point = "tool.execute.error"
	ToolExecuteDenied Point = "tool.execute.denied"
	ToolApprovalPre   Point = "tool.approval.pre"  // decision: layer 4
	ToolApprovalPost  Point = "tool.approval.post" // may rewrite output
	LLMRequestBefore  Point = "llm.request.before"
	LLMResponseAfter  Point = "llm.response.after"
	LLMResponseError  Point = "llm.response.error"
	SessionSaveBefore Point = "session.save.before"
	SessionSaveAfter  Point = "session.save.after"
	// PreCompact and PostCompact surround a compaction of the conversation
	// (Reason says why; PostCompact's Output is the summary).
	PreCompact  Point = "context.compact.before"
	PostCompact Point = "context.compact.after"
)

// Payload is what a hook receives (as JSON on stdin for command hooks).
type Payload struct {
	Point     Point           `json:"point"`
	JobID     string          `json:"jobId"`
	CallID    string          `json:"callId,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Output    string          `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Decision  string          `json:"decision,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Mode      string          `json:"mode,omitempty"`
	Workspace string          `json:"workspace"`
	Turn      int             `json:"turn,omitempty"`
	// Request describes the model call about to be made (llm.request.before).
	Request *LLMRequest `json:"request,omitempty"`
	// Usage is what the model call cost (llm.response.after).
	Usage *LLMUsage `json:"usage,omitempty"`
	// Session says what is being saved where (session.save.before/after).
	Session *SessionSave `json:"session,omitempty"`
}

// LLMRequest describes one model call for hooks.
type LLMRequest struct {
	// Model is the job's model override; "" means the worker's model.
	Model string `json:"model"`
	// Messages counts the conversation sent; Tools names the tools offered.
	Messages int      `json:"messages"`
	Tools    []string `json:"tools"`
}

// LLMUsage is one model call's token usage.
type LLMUsage struct {
	PromptTokens     int    `json:"promptTokens"`
	CompletionTokens int    `json:"completionTokens"`
	TotalTokens      int    `json:"totalTokens"`
	FinishReason     string `json:"finishReason,omitempty"`
	ToolCalls        int    `json:"toolCalls"`
}

// SessionSave names the transcript and audit files of a save and the
// sequence numbers it writes (messages from FirstMessage up to, not
// including, LastMessage; audit records after AuditFrom up to AuditTo).
type SessionSave struct {
	Transcript   string `json:"transcript"`
	Audit        string `json:"audit"`
	FirstMessage int    `json:"firstMessage"`
	LastMessage  int    `json:"lastMessage"`
	AuditFrom    int    `json:"auditFrom"`
	AuditTo      int    `json:"auditTo"`
}

// Decision is what a hook decided about a call: Allow, Deny, Ask, or ""
// (no decision: the next hook, then a person, decides).
type Decision string

// The decisions a hook can make.
const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
	Ask   Decision = "ask"
)

// Result is a decision hook's answer. The zero value is "no decision".
type Result struct {
	Decision       Decision        `json:"decision,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	ModifiedInput  json.RawMessage `json:"modifiedInput,omitempty"`
	ModifiedOutput *string         `json:"modifiedOutput,omitempty"`
	// Hook names the handler that produced the result (set by the dispatcher).
	Hook string `json:"hook,omitempty"`
}

// Config is the "hooks" object of settings.json: hook point (or a Claude Code
// event name such as "PreToolUse") to matcher groups.
type Config map[string][]MatcherGroup

// MatcherGroup binds command hooks to the tools whose name matches Matcher
// (a tool name, "A|B", a regular expression, or "" / "*" for all).
type MatcherGroup struct {
	Matcher string     `json:"matcher,omitempty"`
	Hooks   []HookSpec `json:"hooks"`
}

// HookSpec is one configured command hook.
type HookSpec struct {
	Type     string `json:"type"` // "command"
	Command  string `json:"command"`
	Timeout  int    `json:"timeout,omitempty"` // seconds
	Priority int    `json:"priority,omitempty"`
}
