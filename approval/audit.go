package approval

import (
	"encoding/json"
	"time"
)

// AuditRecord is one approval decision as the audit trail keeps it (layer 6).
// Time comes from workflow.Now, never the wall clock.
type AuditRecord struct {
	Seq    int             `json:"seq"`
	Time   time.Time       `json:"time"`
	JobID  string          `json:"jobId,omitempty"`
	Turn   int             `json:"turn,omitempty"`
	CallID string          `json:"callId,omitempty"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input,omitempty"`
	Mode   Mode            `json:"mode,omitempty"`
	// Verdict is the deciding verdict (decision, layer, rule, reason, system).
	Verdict
	// By names the human or hook that decided at layers 4-5.
	By string `json:"by,omitempty"`
	// LearnedRule is the rule an Always/Never answer added, if any.
	LearnedRule string `json:"learnedRule,omitempty"`
}
