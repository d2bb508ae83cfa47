// Package hooks holds custos' hook points, the handler registry (system hooks in
// Go, user hooks as commands) and the runner for command hooks.
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
}

// Result is a decision hook's answer. The zero value is "no decision".
type Result struct {
	Decision       string          `json:"decision,omitempty"` // "allow", "deny", "ask" or ""
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
