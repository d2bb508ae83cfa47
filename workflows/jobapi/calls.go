package jobapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/custos-dev/custos/approval"
)

// ToolUpdate runs a UserCall in a job and answers with its UserCallResult.
const ToolUpdate = "tool"

// UserCall is a tool call a person makes.
type UserCall struct {
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	By      string          `json:"by,omitempty"`
	Channel string          `json:"channel,omitempty"`
}

// UserCallResult is what became of it: the tool's output, or the denial
// (who or what refused it and why) as the model would read it.
type UserCallResult struct {
	CallID   string            `json:"callId"`
	Decision approval.Decision `json:"decision"`
	Layer    approval.Layer    `json:"layer"`
	Output   string            `json:"output"`
}

// RetryRequest is the retry Update's input; RetryResult its answer.
type RetryRequest struct {
	By string `json:"by,omitempty"`
}

// RetryResult says what the job was waiting for.
type RetryResult struct {
	Kind     string `json:"kind"`
	Error    string `json:"error"`
	Attempts int    `json:"attempts"`
}

// Scopes of a grant.
const (
	ScopeJob       = "job"
	ScopeWorkspace = "workspace"
)

// QuorumNeeded says what a waiting call's approvals still miss ("none"
// when they are met).
func QuorumNeeded(qs []QuorumState) string {
	var parts []string
	for _, q := range qs {
		if n := q.Require - len(q.Approved); n > 0 {
			parts = append(parts, fmt.Sprintf("%d more from %s", n, strings.Join(q.From, ", ")))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " and ")
}

// QuorumVoters are the distinct people counted so far, entry by entry.
func QuorumVoters(qs []QuorumState) []string {
	var out []string
	for _, q := range qs {
		for _, id := range q.Approved {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}
