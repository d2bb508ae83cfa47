// Package approval holds custos' pure approval policy: the request and decision
// types, the rule parser and engine, presets, permission modes, the pure layers
// of the pipeline and settings loading. It reads Bash command lines with
// approval/shell and judges what that package finds.
//
// Everything here except settings loading is deterministic and safe to call from
// workflow code.
package approval

import (
	"encoding/json"

	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/netpolicy"
)

// Mode is a job's permission mode (layer 3).
type Mode string

const (
	ModeDefault     Mode = "default"
	ModeAcceptEdits Mode = "acceptEdits"
	ModeDontAsk     Mode = "dontAsk"
	ModePlan        Mode = "plan"
	ModeBypass      Mode = "bypass"
)

// Decision is what a layer says about a tool call.
type Decision string

const (
	Allow    Decision = "allow"
	Deny     Decision = "deny"
	Ask      Decision = "ask"
	Modified Decision = "modified"
	Continue Decision = "continue"
)

// Layer names the pipeline layer that made a decision; the audit records it.
type Layer string

const (
	LayerRules    Layer = "rules"    // 1: system and user rules
	LayerReadOnly Layer = "readonly" // 2: read-only tools
	LayerMode     Layer = "mode"     // 3: permission mode
	LayerHook     Layer = "hook"     // 4: PreToolUse (tool.approval.pre) hooks
	LayerHuman    Layer = "human"    // 5: human confirmation (including its timeout)
)

// Call is one tool call as the model asked for it.
type Call struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	// MCPReadOnly: an MCP tool whose server, trusted by the user's own
	// settings, declares it read-only and not destructive (see readOnly).
	MCPReadOnly bool `json:"mcpReadOnly,omitempty"`
}

// Verdict is the outcome of a layer (or of layers 1-3 together).
type Verdict struct {
	Decision Decision `json:"decision"`
	Layer    Layer    `json:"layer,omitempty"`
	// Rule is the rule text that matched, e.g. "Bash(rm -rf /)" or a preset name.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	// System is true when a system (non-overridable) rule decided.
	System bool `json:"system,omitempty"`
	// Program and Option name the program table entry and the option (or
	// script command, or variable) that decided, when one did: rg --pre,
	// git diff --output (programs.go).
	Program string `json:"program,omitempty"`
	Option  string `json:"option,omitempty"`
}

// Settings is the merged configuration of a job, in the shape Claude Code users
// already write in settings.json.
type Settings struct {
	Permissions Permissions     `json:"permissions"`
	Hooks       hooks.Config    `json:"hooks,omitempty"`
	Sandbox     SandboxSettings `json:"sandbox,omitempty"`
	// Approvals are the calls that need N of M people (quorum.go);
	// Identities the user's own identities on the channels, which never
	// count towards a quorum of their jobs.
	Approvals  []QuorumRule `json:"approvals,omitempty"`
	Identities []string     `json:"identities,omitempty"`
	// Approval is how layer 5 waits: escalation steps, per-rule deadlines.
	Approval ApprovalSettings `json:"approval,omitzero"`
	// Conversation is how long a job waits for a message and its budget.
	Conversation ConversationSettings `json:"conversation,omitzero"`
	// Subagents is how many Task children a job runs at once.
	Subagents SubagentSettings `json:"subagents,omitzero"`
	// Retention is how long custos keeps what it writes into its state
	// directory; only the user's own settings set it.
	Retention RetentionSettings `json:"retention,omitzero"`
	// LSP names the language server for a language ("go": ["gopls"]):
	// a command the worker runs, so only the user's settings and a
	// trusted workspace's set it (Restrict drops it). An empty list turns
	// the language's server off; a language not named gets the default.
	LSP map[string][]string `json:"lsp,omitempty"`
}

// Permissions are the user's rule lists and default mode.
type Permissions struct {
	Allow       []string `json:"allow,omitempty"`
	Ask         []string `json:"ask,omitempty"`
	Deny        []string `json:"deny,omitempty"`
	DefaultMode Mode     `json:"defaultMode,omitempty"`
	// DisableBypass is Claude Code's "disableBypassPermissionsMode":
	// "disable": no job may be in bypass mode (CheckMode). Any settings file
	// may set it; it only narrows.
	DisableBypass bool `json:"disableBypassPermissionsMode,omitempty"`
}

// SandboxSettings configure the OS sandbox Bash runs in.
type SandboxSettings struct {
	// FailIfUnavailable refuses commands when the worker has no OS sandbox
	// (the default now; it also overrides AllowUnsandboxed).
	FailIfUnavailable bool `json:"failIfUnavailable,omitempty"`
	// AllowUnsandboxed lets commands run without OS isolation when the
	// worker has no sandbox, each approved by a person. Honoured only from
	// the user's own settings file, never from a workspace.
	AllowUnsandboxed bool             `json:"allowUnsandboxed,omitempty"`
	Network          netpolicy.Policy `json:"network,omitempty"`
	// Env names extra environment variables passed from the worker into commands.
	Env []string `json:"env,omitempty"`
	// Toolchains narrows which toolchains the sandbox provisions with the
	// host's caches and the workspace's own: nil detects every
	// one the workspace uses, a list only those (Toolchains), an empty list
	// none. A workspace's settings can only narrow the user's.
	Toolchains *[]string `json:"toolchains,omitempty"`
}
