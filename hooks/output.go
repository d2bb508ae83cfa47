package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Outcome is what running one command hook produced. Result is empty ("no
// decision") whenever Err is set: a hook that fails never allows by accident.
type Outcome struct {
	Hook     string        `json:"hook"`
	Result   Result        `json:"result"`
	ExitCode int           `json:"exitCode"` // -1 when the process did not exit normally
	Stderr   string        `json:"stderr,omitempty"`
	Err      string        `json:"err,omitempty"`
	TimedOut bool          `json:"timedOut,omitempty"`
	Duration time.Duration `json:"duration"`
}

// hookOutput is the union of the answers we accept on stdout: ours
// ({decision, reason, modifiedInput, modifiedOutput}), Claude Code's PreToolUse
// hookSpecificOutput, and Claude Code's top-level {"decision":"block"}. Unknown
// fields (suppressOutput, systemMessage, …) are ignored.
type hookOutput struct {
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	ModifiedInput      json.RawMessage `json:"modifiedInput"`
	ModifiedOutput     *string         `json:"modifiedOutput"`
	HookSpecificOutput *struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// ParseOutput reads a hook's stdout. Empty output is no decision. Claude Code's
// hookSpecificOutput wins over top-level fields (as in Claude Code, where the
// top-level decision is the deprecated form). Decisions are normalised:
// allow/approve → "allow", deny/block → "deny", ask → "ask", defer → none.
// Modified input must be a JSON object (a tool input); anything malformed is an
// error, never a partial result.
func ParseOutput(stdout []byte) (Result, error) {
	if len(bytes.TrimSpace(stdout)) == 0 {
		return Result{}, nil
	}
	var ho hookOutput
	if err := json.Unmarshal(stdout, &ho); err != nil {
		return Result{}, fmt.Errorf("hook stdout is not a JSON object: %w (stdout: %q)", err, Shorten(string(stdout), 120))
	}
	decision, reason, input := ho.Decision, ho.Reason, ho.ModifiedInput
	if hs := ho.HookSpecificOutput; hs != nil {
		if hs.PermissionDecision != "" {
			decision, reason = hs.PermissionDecision, hs.PermissionDecisionReason
		}
		if len(hs.UpdatedInput) > 0 {
			input = hs.UpdatedInput
		}
	}
	d, err := normaliseDecision(decision)
	if err != nil {
		return Result{}, err
	}
	if isJSONNull(input) {
		input = nil
	}
	if len(input) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(input, &obj); err != nil {
			return Result{}, fmt.Errorf("hook's modified input is not a JSON object: %w", err)
		}
	}
	res := Result{Decision: d, ModifiedInput: input, ModifiedOutput: ho.ModifiedOutput}
	if !res.Empty() {
		res.Reason = reason
	}
	return res, nil
}

func normaliseDecision(d string) (Decision, error) {
	switch strings.ToLower(strings.TrimSpace(d)) {
	case "":
		return "", nil
	case "allow", "approve":
		return Allow, nil
	case "deny", "block":
		return Deny, nil
	case "ask":
		return Ask, nil
	case "defer":
		return "", nil
	default:
		return "", fmt.Errorf("unknown hook decision %q (want allow, deny, ask or block)", d)
	}
}

func isJSONNull(b json.RawMessage) bool {
	return string(bytes.TrimSpace(b)) == "null"
}
